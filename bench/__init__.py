"""Benchmarks: daliaug against ImageDataGenerator and tf.data (see bench/README.md)."""
