"""readers.tensorflow.savedmodel"""
