"""torchvision v2 transforms on daliaug: :func:`daliaug.from_torchvision` compiles a
``Compose`` into one config (:mod:`daliaug.torchvision.compile`), one converter per torchvision
class (:mod:`daliaug.torchvision.converters`). The transforms are read by their attributes:
neither torch nor torchvision is imported here.
"""
