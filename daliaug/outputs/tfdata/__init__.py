"""The TensorFlow output: the ``tf.data.Dataset`` ``make_dataset`` gives ``model.fit``
(:mod:`~daliaug.outputs.tfdata.dataset`), one pipeline per replica under ``tf.distribute``
(:mod:`~daliaug.outputs.tfdata.replicas`), and the bridges from each engine's graph. It needs
the ``tensorflow`` extra: TensorFlow and DALI's TensorFlow plugin."""
