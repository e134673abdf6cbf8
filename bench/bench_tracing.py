"""Tracing overhead: milliseconds per turn of a 3-turn tool loop, traced and not.

Four variants of our client against the same raw endpoint, back to back (the order rotates per
repetition): ``tracing=False`` (the baseline), the default with ``opentelemetry-api`` installed
and no SDK (every run starts one no-op span and nothing else), an SDK ``TracerProvider`` whose
processor drops every span (the cost of making the spans), and the same with
``trace_content=True``. Reported: medians; the overhead is the median of the per-repetition
differences against the baseline.

    .venv/bin/python bench/bench_tracing.py            # ~20 s
    .venv/bin/python bench/bench_tracing.py --quick    # ~6 s smoke run
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from common import (
    API_KEY,
    PROMPT,
    Row,
    check_ours,
    endpoint,
    make_toolkit,
    median,
    model_name,
    print_table,
    timed,
)

TURNS = 3
TARGET_MS = 0.1  # the loop's own budget per turn; untraced runs must stay inside it


def sdk_provider() -> Any:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

    class Drop(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(Drop()))
    return provider


async def measure(quick: bool) -> list[Row]:
    import toolnexus as tn

    reps = 3 if quick else 7
    runs = 100 if quick else 200
    toolkit = await make_toolkit()
    provider = sdk_provider()
    variants: dict[str, dict[str, Any]] = {
        "tracing=False": {"tracing": False},
        "API only (no SDK)": {"tracing": None},
        "SDK provider": {"tracing": provider},
        "SDK + content": {"tracing": provider, "trace_content": True},
    }
    samples: dict[str, list[float]] = {name: [] for name in variants}
    async with endpoint("raw") as url:
        clients = {
            name: tn.create_client(
                base_url=url + "/v1",
                model=model_name(TURNS),
                api_key=API_KEY,
                max_turns=TURNS + 1,
                **opts,
            )
            for name, opts in variants.items()
        }
        try:

            def batch(client: Any) -> Any:
                async def play() -> None:
                    for _ in range(runs):
                        check_ours(await client.run(PROMPT, toolkit), TURNS)

                return play

            names = list(variants)
            for name in names:
                await batch(clients[name])()  # warm up
            for rep in range(reps):
                for name in names[rep % len(names) :] + names[: rep % len(names)]:
                    seconds = await timed(batch(clients[name]))
                    samples[name].append(seconds * 1000 / (runs * TURNS))
        finally:
            for client in clients.values():
                await client.aclose()
    base = samples["tracing=False"]
    rows = []
    for name in names:
        diffs = [s - b for s, b in zip(samples[name], base, strict=True)]
        extra = median(diffs)
        untraced = name in ("tracing=False", "API only (no SDK)")
        rows.append(
            Row(
                metric=f"3-turn loop, ms/turn: {name}",
                floor=f"{median(base):.3f}",
                ours=f"{median(samples[name]):.3f}",
                delta=f"{extra:+.3f} ms/turn",
                target=f"<= +{TARGET_MS} ms" if untraced else "-",
                ok=(extra <= TARGET_MS) if untraced else None,
            )
        )
    return rows


async def amain() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a ~6 s smoke run")
    args = parser.parse_args()
    rows = await measure(args.quick)
    print_table(rows, "tracing overhead (raw server, same process; medians; floor = tracing off)")


if __name__ == "__main__":
    asyncio.run(amain())
