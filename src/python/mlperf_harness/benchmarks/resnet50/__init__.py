"""ResNet-50 v1.5 on ImageNet: the official model's interface and the embedded stand-in model."""
