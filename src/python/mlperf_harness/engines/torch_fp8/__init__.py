"""The 8-bit (FP8 e4m3) torch engine for convolutional networks on Hopper GPUs (sm_90)."""
