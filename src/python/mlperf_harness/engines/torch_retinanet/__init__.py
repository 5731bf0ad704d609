"""RetinaNet's torch engine: the ONNX network in fp16 with its postprocessing on the GPU."""
