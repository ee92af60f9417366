"""readers.tensorflow.bundle"""
