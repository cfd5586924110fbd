"""torchtune's own tokenizer classes, imported from its pinned wheel without its training stack.

`import torchtune` runs the package's __init__, which imports torchao, `datasets` (with pyarrow
and pandas), torchdata and the recipes' whole stack. The tokenizer modules need only torch, regex
and sentencepiece, so the packages above them are made bare namespaces here (their __init__ files
are not run) and the tokenizer modules are imported from the wheel's files unmodified. Two names
that torchtune.data imports at load time for its dataset helpers, `datasets.load_dataset` and
`torchtune.config._utils._get_component_from_path` (only for prompt templates given as dotted
strings), are stand-ins that raise if called: the tokenizers never call them.
"""

import importlib
import importlib.util
import os
import sys
import types

_BARE_PACKAGES = [
    "torchtune",
    "torchtune.config",
    "torchtune.data",
    "torchtune.modules",
    "torchtune.modules.transforms",
    "torchtune.modules.transforms.tokenizers",
    "torchtune.modules.tokenizers",
    "torchtune.models",
    "torchtune.models.gemma",
    "torchtune.models.mistral",
    "torchtune.models.phi3",
    "torchtune.models.phi4",
    "torchtune.models.qwen2",
    "torchtune.models.qwen2_5",
]

# (package, module, names): what each bare package's __init__ would have exported.
_EXPORTS = [
    ("torchtune.modules.transforms", "torchtune.modules.transforms._transforms", ["Transform"]),
    ("torchtune.data", "torchtune.data._messages", ["Message"]),
    ("torchtune.data", "torchtune.data._utils", ["truncate"]),
    ("torchtune.data", "torchtune.data._prompt_templates", ["PromptTemplate", "PromptTemplateInterface", "ChatMLTemplate"]),
    (
        "torchtune.modules.transforms.tokenizers",
        "torchtune.modules.transforms.tokenizers._utils",
        ["BaseTokenizer", "ModelTokenizer", "tokenize_messages_no_special_tokens"],
    ),
    (
        "torchtune.modules.transforms.tokenizers",
        "torchtune.modules.transforms.tokenizers._sentencepiece",
        ["SentencePieceBaseTokenizer"],
    ),
    ("torchtune.modules.transforms.tokenizers", "torchtune.modules.transforms.tokenizers._gpt2", ["GPT2BaseTokenizer"]),
    ("torchtune.modules.tokenizers", "torchtune.modules.transforms.tokenizers._utils", ["ModelTokenizer"]),
]


def _never_called(module: str, name: str) -> types.ModuleType:
    m = types.ModuleType(module)

    def fail(*args, **kwargs):
        raise RuntimeError(f"{module}.{name} is not available to the tokenizer fixtures")

    setattr(m, name, fail)
    sys.modules[module] = m
    return m


def load():
    """Returns torchtune's `torchtune` namespace with the tokenizer modules imported."""
    spec = importlib.util.find_spec("torchtune")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("tokenizer fixtures: torchtune is not installed (scripts/tokenizer_fixtures.py installs it)")
    root = list(spec.submodule_search_locations)[0]
    if "torchtune.models" in sys.modules and not hasattr(sys.modules["torchtune.models"], "_fixture_bare"):
        raise SystemExit("tokenizer fixtures: torchtune was already imported the ordinary way")
    _never_called("datasets", "load_dataset")
    _never_called("datasets.distributed", "split_dataset_by_node")
    _never_called("torchtune.config._utils", "_get_component_from_path")
    for name in _BARE_PACKAGES:
        if name in sys.modules:
            continue
        m = types.ModuleType(name)
        m.__path__ = [os.path.join(root, *name.split(".")[1:])]
        m._fixture_bare = True
        sys.modules[name] = m
        parent, _, child = name.rpartition(".")
        if parent:
            setattr(sys.modules[parent], child, m)
    for package, module, names in _EXPORTS:
        loaded = importlib.import_module(module)
        for n in names:
            setattr(sys.modules[package], n, getattr(loaded, n))
    for module in [
        "torchtune.models.gemma._tokenizer",
        "torchtune.models.mistral._prompt_template",
        "torchtune.models.mistral._tokenizer",
        "torchtune.models.phi3._tokenizer",
        "torchtune.models.phi4._tokenizer",
        "torchtune.models.qwen2._tokenizer",
        "torchtune.models.qwen2_5._tokenizer",
        "torchtune.data._prompt_templates",
    ]:
        importlib.import_module(module)
    return sys.modules["torchtune"]
