"""TensorRT engines: ONNX -> a serialized TensorRT 10 engine (fp32, fp16, int8 with an entropy
calibrator), with a timing cache and a calibration cache of their own."""
