"""Devices: the GPU pool and its slots, the hardware record, precision and speed figures."""
