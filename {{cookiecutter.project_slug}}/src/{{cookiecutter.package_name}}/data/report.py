"""metrics/data.json and the notebook's table: the benchmark's numbers with the data's counts.

One flat record per run (`data_metrics`): the counts from meta.json, how the shards were
written (rate, workers, bytes against the source folder's), and the benchmark's result.
"""

from __future__ import annotations

from typing import Any


def data_metrics(meta: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    """metrics/data.json: the counts from meta.json and the benchmark's numbers, one flat record."""
    splits = meta["splits"]
    return {
        "dataset": meta["dataset"],
        "classes": meta["classes"],
        "num_classes": meta["num_classes"],
        "image_shape": meta["image_shape"],
        "train_count": splits["train"]["count"],
        "validation_count": splits["validation"]["count"],
        "per_class": {split: splits[split]["per_class"] for split in splits},
        "shards": {split: len(splits[split]["shards"]) for split in splits},
        "encoding": meta.get("encoding", "png"),
        **_write_numbers(meta),
        **result,
    }


def steps_table(result: dict[str, Any]) -> str:
    """The `steps` rows of a benchmark result as a markdown table, naive first."""
    lines = [
        "| pipeline | what it adds | first epoch (ex/s) | steady state (ex/s) | × naive |",
        "|---|---|---:|---:|---:|",
    ]
    for row in result.get("steps", []):
        lines.append(
            f"| {row['name']} | {row['adds']} | {row['first_epoch_examples_per_sec']:,.0f} | "
            f"{row['examples_per_sec']:,.0f} | {row['speedup_vs_naive']:.2f} |"
        )
    return "\n".join(lines)


def _write_numbers(meta: dict[str, Any]) -> dict[str, Any]:
    """How the shards were written (meta.json's "write"; also when they were reused)."""
    write = meta.get("write") or {}
    return {
        "write_examples_per_sec": write.get("examples_per_sec"),
        "write_workers": write.get("workers"),
        "write_seconds": write.get("seconds"),
        "shard_bytes": write.get("shard_bytes"),
        "source_bytes": write.get("source_bytes"),
        "kept_original_files": write.get("kept_original_files"),
        "data_reused": bool(meta.get("reused")),
    }
