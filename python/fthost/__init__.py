"""fthost: full-parameter finetuning of LLMs, torchtune's recipe as a native host with plugins.

The package holds the ``fthost`` executable, its plugins and shipped configs, and the plugin
SDK (headers and CMake package)::

    cmake -DCMAKE_PREFIX_PATH="$(python -c 'import fthost; print(fthost.cmake_prefix_path)')" ...

then ``find_package(fthost)`` in the plugin's CMakeLists.txt (docs/plugins.md).
"""
from pathlib import Path as _Path

from ._build import torch_version, version

__version__ = version

#: The install prefix: bin/fthost, lib/, include/ft, share/fthost/configs, lib/cmake/fthost.
prefix = str(_Path(__file__).resolve().parent)
#: For CMAKE_PREFIX_PATH, as torch.utils.cmake_prefix_path is for LibTorch.
cmake_prefix_path = prefix
#: The executable itself (the ``fthost`` command checks the PyTorch beside it, then runs this).
executable = str(_Path(prefix) / "bin" / "fthost")

__all__ = ["__version__", "cmake_prefix_path", "executable", "prefix", "torch_version"]
