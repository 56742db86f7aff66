"""What ships inside the package: the embedded test model and the assets folder of stand-in samples."""

from pathlib import Path

ASSETS = Path(__file__).resolve().parent / "assets"
EMBEDDED_MODEL = Path(__file__).parent / "assets" / "tiny_llama"
