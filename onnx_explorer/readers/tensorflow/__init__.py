"""readers.tensorflow"""
