"""eval beir, eval qa."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from appliance.cli.common import current_settings, echo_json, handle_errors
from appliance.evaluate.modes import EVAL_MODES


def _print_latency(latency: dict[str, Any]) -> None:
    for stage, values in latency.items():
        click.echo(f"  {stage:<10} p50 {values['p50']:8.2f} ms   p95 {values['p95']:8.2f} ms")


def register(cli: click.Group) -> None:
    @cli.group("eval")
    def eval_group() -> None:
        """Measure retrieval quality on your own judgments."""

    @eval_group.command("beir")
    @click.argument("folder", type=click.Path(exists=True, file_okay=False, path_type=Path))
    @click.option("--split", default="test", help="qrels/<SPLIT>.tsv to score against.")
    @click.option("--mode", type=click.Choice(EVAL_MODES), default="hybrid", help="Retriever to measure.")
    @click.option("--run-out", type=click.Path(dir_okay=False, path_type=Path), help="Write a TREC run file here.")
    @click.option("--json", "as_json", is_flag=True, help="Print JSON.")
    @handle_errors
    def eval_beir_command(folder: Path, split: str, mode: str, run_out: Path | None, as_json: bool) -> None:
        """Score retrieval on a BEIR-format FOLDER (corpus.jsonl, queries.jsonl, qrels/SPLIT.tsv).

        The corpus is indexed with the real chunker into its own index under the home (reused when
        unchanged); each query ranks documents by their best chunks. Prints nDCG@10 (trec_eval's
        linear gains), Recall@10, Recall@100, MRR@10 and latency p50/p95 per stage.

        Example: appliance eval beir ../shared/data/scifact --split train --mode hybrid --run-out run.trec
        """
        from appliance.evaluate.runner import eval_beir  # the evaluation, loaded only for this command

        progress = None if as_json else (lambda message: click.echo(message, err=True))
        result = eval_beir(
            current_settings(),
            folder,
            split=split,
            mode=mode,  # type: ignore[arg-type]
            run_out=run_out,
            progress=progress,
        )
        if as_json:
            echo_json(result)
            return
        click.echo(f"{result['dataset']} [{split}] mode={mode}, {result['queries']} queries")
        click.echo(
            f"nDCG@10 {result['ndcg@10']:.4f}   Recall@10 {result['recall@10']:.4f}   "
            f"Recall@100 {result['recall@100']:.4f}   MRR@10 {result['mrr@10']:.4f}"
        )
        _print_latency(result["latency_ms"])

    @eval_group.command("qa")
    @click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
    @click.option("--json", "as_json", is_flag=True, help="Print JSON (with per-question details).")
    @handle_errors
    def eval_qa_command(file: Path, as_json: bool) -> None:
        """Score a golden QA FILE (JSON lines: question, gold_files, answer_keyphrases, answerable)
        against the current index: gold-file recall@1/5/10, MRR and the refusal decision.

        gold_files are document paths as the index shows them (source folder name + path inside).

        Example: appliance eval qa scripts/qa/runbooks_heldout.jsonl --json
        """
        from appliance.evaluate.runner import eval_qa

        result = eval_qa(current_settings(), file)
        if as_json:
            echo_json(result)
            return
        click.echo(f"{result['file']}: {result['answerable']} answerable, {result['unanswerable']} unanswerable")
        click.echo(
            f"gold recall@1 {result['gold_recall@1']}  @5 {result['gold_recall@5']}  @10 {result['gold_recall@10']}"
            f"  MRR@10 {result['mrr@10']}"
        )
        click.echo(
            f"refusals: precision {result['refusal_precision']}  recall {result['refusal_recall']}  "
            f"false refusal rate {result['false_refusal_rate']}"
        )
        click.echo(f"latency p50 {result['latency_ms']['p50']} ms  p95 {result['latency_ms']['p95']} ms")
