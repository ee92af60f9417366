"""readers.protobuf"""
