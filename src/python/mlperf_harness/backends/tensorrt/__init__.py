"""The tensorrt backend: TensorRT 10 engines run with execute_async_v3 (NVIDIA's path), imported only
when chosen."""
