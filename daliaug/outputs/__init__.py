"""Outputs: how batches reach a framework (tf.data, NumPy), each starting from
:func:`daliaug.prepare.prepare` and an engine's graph. Importing this package imports no
framework."""
