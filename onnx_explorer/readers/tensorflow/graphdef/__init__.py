"""readers.tensorflow.graphdef"""
