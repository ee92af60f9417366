"""weights"""
