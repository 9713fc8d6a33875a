from typing_extensions import Buffer



BACKEND_ENV: str

def crc32c(data: Buffer, value: int = 0) -> int: ...
def crc32c_backend() -> str: ...
