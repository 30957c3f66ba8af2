"""tinysched: certified peak-memory deployment of int8 TFLite models on microcontrollers."""

__version__ = "0.1.0"
