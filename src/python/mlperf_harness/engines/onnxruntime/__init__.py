"""ONNX Runtime engines: an FP32 graph-optimized model and an INT8 model by static QDQ quantization."""
