"""The ``fthost`` console script: checks that the PyTorch beside the package is the one fthost
was built against, before anything loads LibTorch, then replaces itself with bin/fthost."""
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

from . import _build

_PACKAGE = Path(__file__).resolve().parent


def _package_dir(name):
    """Where ``name`` is installed, found without importing it (importing torch takes seconds)."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def _torch_version(torch_dir):
    text = (torch_dir / "version.py").read_text(encoding="utf-8")
    match = re.search(r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", text, re.MULTILINE)
    return match.group(1) if match else None


def _fail(message):
    sys.stderr.write(f"fthost: {message}\n")
    sys.exit(2)


def _library_path(torch_dir):
    """LD_LIBRARY_PATH entries for a torch outside this package's site-packages (a user site, a
    --system-site-packages environment): the libraries' own RUNPATHs look beside the package."""
    site = torch_dir.parent
    if site == _PACKAGE.parent:
        return []
    dirs = [torch_dir / "lib", site / "nvidia" / "cu13" / "lib", site / "nvidia" / "cuda_runtime" / "lib"]
    pyarrow_dir = _package_dir("pyarrow")
    if pyarrow_dir is not None:
        dirs.append(pyarrow_dir)
    return [str(d) for d in dirs if d.is_dir()]


def main():
    needed = _build.torch_version
    torch_dir = _package_dir("torch")
    if torch_dir is None:
        _fail(f"fthost {_build.version} needs PyTorch {needed} (torch=={needed.split('+')[0]}), and this Python "
              f"({sys.executable}) has no torch: pip install torch=={needed.split('+')[0]}")
    found = _torch_version(torch_dir)
    if found != needed:
        _fail(f"fthost {_build.version} was built against PyTorch {needed} and needs exactly it; this Python "
              f"({sys.executable}) has PyTorch {found} at {torch_dir}. Install the matching one "
              f"(pip install torch=={needed.split('+')[0]}, the {needed.partition('+')[2] or 'default'} build), "
              f"or an fthost wheel built for {found}.")
    env = os.environ.copy()
    extra = _library_path(torch_dir)
    if extra:
        env["LD_LIBRARY_PATH"] = os.pathsep.join(extra + [p for p in env.get("LD_LIBRARY_PATH", "").split(os.pathsep) if p])
    executable = _PACKAGE / "bin" / "fthost"
    args = sys.argv[1:]
    if args[:1] == ["--version"]:
        status = subprocess.run([str(executable), "--version"], env=env, check=False).returncode
        print(f"PyTorch {found} at {torch_dir} (this build needs {needed})")
        sys.exit(status)
    os.execve(str(executable), [str(executable)] + args, env)


if __name__ == "__main__":
    main()
