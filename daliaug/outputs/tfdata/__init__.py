"""The TensorFlow output: ``make_dataset``'s ``tf.data.Dataset`` for ``model.fit``, one pipeline per
replica under ``tf.distribute``, and the bridges from each engine's graph."""
