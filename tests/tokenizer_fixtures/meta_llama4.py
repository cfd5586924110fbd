"""Meta's own Llama 4 tokenizer and chat format (llama_models.llama4), imported without its vision stack.

llama_models.llama4.chat_format imports the image preprocessing module at load time, which needs
torchvision; text never reaches it (ChatFormat builds image transforms only when given vision
arguments). That one module is a stand-in whose classes raise if constructed; everything else is
imported from the pinned wheel unmodified.
"""

import importlib
import importlib.util
import sys
import types
from pathlib import Path

_PREPROCESS = "llama_models.llama4.preprocess"


def _image_transforms_stand_in():
    m = types.ModuleType(_PREPROCESS)

    class NotAvailable:
        def __init__(self, *args, **kwargs):
            raise RuntimeError("image transforms are not available to the tokenizer fixtures")

    m.ResizeNormalizeImageTransform = NotAvailable
    m.VariableSizeImageTransform = NotAvailable
    sys.modules[_PREPROCESS] = m


def load(tokenizer_model: str):
    """Returns (tokenizer, chat_format, datatypes): Meta's Tokenizer on `tokenizer_model`, a text-only
    ChatFormat around it, and llama_models.datatypes (RawMessage, StopReason, ToolPromptFormat)."""
    if importlib.util.find_spec("llama_models") is None:
        raise SystemExit(
            "tokenizer fixtures: llama_models is not installed (scripts/tokenizer_fixtures.py installs it)"
        )
    if _PREPROCESS not in sys.modules:
        _image_transforms_stand_in()
    tokenizer_module = importlib.import_module("llama_models.llama4.tokenizer")
    chat_format_module = importlib.import_module("llama_models.llama4.chat_format")
    datatypes = importlib.import_module("llama_models.datatypes")
    tokenizer = tokenizer_module.Tokenizer(Path(tokenizer_model))
    return tokenizer, chat_format_module.ChatFormat(tokenizer), datatypes
