"""Prediction folders laid out as the two papers' public repositories publish them.

Each builder copies runs from the reference data (``../shared/reference/llm_outputs``)
into the layout of one repository, file names and nesting as published:

- JunoBench_construct: ``llms/detect_if_cell_crash/<model>/results_buggy/
  crash_detection_results_<case>.json`` and ``results_fixed/…``, beside the prompt inputs
  ``input_nb_buggy_processed/<case>.json``;
- CRANE-LLM: ``llms/llms_outputs/results_raw/<Model>/crash_detection_<setting>/<instance>.json``
  with the small libraries in ``other/``, and the LLM judge's labels in
  ``results_parsed_<k>/<Model>/crash_detection_<setting>/…``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from junobench import vocab
from junobench.detection.predictions import parse_run

#: Libraries the CRANE-LLM repository keeps in ``other/``.
OTHER_LIBRARIES = ("matplotlib", "seaborn", "statsmodels", "lightgbm", "torchvision")


def construct_tree(root: Path, mistral: Path, model: str = "mistralsmall31_latest") -> Path:
    """``root/llms/detect_if_cell_crash/<model>`` from the reference's buggy/fixed folders."""
    base = root / "llms" / "detect_if_cell_crash"
    inputs = base / "input_nb_buggy_processed"
    inputs.mkdir(parents=True, exist_ok=True)
    (inputs / "torch_1.json").write_text(json.dumps(
        {"executed": [{"execution_count": 1, "code": "import torch"}],
         "target": {"execution_count": 2, "code": "torch.ones(2) @ torch.ones(3)"}}))
    model_dir = base / model
    for source, target in (("buggy", "results_buggy"), ("fixed", "results_fixed")):
        (model_dir / target).mkdir(parents=True, exist_ok=True)
        for file in sorted((mistral / source).glob("*.json")):
            shutil.copy(file, model_dir / target / f"crash_detection_results_{file.name}")
    return model_dir


def crane_raw_setting(root: Path, instances: Path, model: str = "Qwen_2_5_32B_Instruct",
                      setting: str = "crash_detection_code") -> Path:
    """``root/llms/llms_outputs/results_raw/<model>/<setting>`` from a folder of instance files."""
    folder = root / "llms" / "llms_outputs" / "results_raw" / model / setting
    (folder / "other").mkdir(parents=True, exist_ok=True)
    for file in sorted(instances.glob("*.json")):
        library = vocab.library_of(vocab.split_instance(file.stem)[0])
        shutil.copy(file, folder / ("other" if library in OTHER_LIBRARIES else "") / file.name)
    return folder


def crane_parsed_setting(root: Path, raw_setting: Path, judge_run: int = 1) -> Path:
    """The judge's labels for every run of a raw setting, as ``results_parsed_<k>`` holds them:
    ``[Wrong]`` for a wrong detection; on a crash detected, the diagnosis grade cycles
    through ``[Correct]``, ``[Partially correct]`` and ``[Reasoning Wrong]``."""
    relative = raw_setting.relative_to(root / "llms" / "llms_outputs" / "results_raw")
    folder = root / "llms" / "llms_outputs" / f"results_parsed_{judge_run}" / relative
    grades = ("[Correct]", "[Partially correct]", "[Reasoning Wrong]")
    for file in sorted(raw_setting.rglob("*.json")):
        crashes = vocab.split_instance(file.stem)[1] == "reproduced"
        labels = []
        for number, run in enumerate(json.loads(file.read_text())):
            detection = parse_run(run).detection
            if detection is None:
                labels.append(f"Cannot verify: {run}")
            elif detection != crashes:
                labels.append("[Wrong]")
            else:
                labels.append(grades[number % 3] if crashes else "[Correct]")
        target = folder / file.relative_to(raw_setting)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(labels, indent=2))
    return folder
