"""Write ``tests/data/ragas_string_scores.json``: ragas 0.4.3's own values for its string metrics.

Run it in the ragas venv (it re-runs itself there when started with another python):

    .bench/ragas-venv/bin/python tests/bench/make_ragas_string_refs.py

The venv is made by ``tests/bench/setup_ragas_env.sh``. ragas imports the libraries behind these
metrics lazily and does not install them, so add them once, at the versions evalcore's own venv
uses (the numbers depend on them; the JSON records the versions it was made with):

    .bench/ragas-venv/bin/python -m pip install rapidfuzz==3.14.6 sacrebleu==2.6.0 rouge-score==0.1.2 nltk==3.10.4

For each (reference, response) pair below it builds a ragas ``SingleTurnSample`` and asks every
metric for ``await metric.single_turn_ascore(sample)``; it then checks that ragas' ``evaluate()``
gives the same numbers for the whole list, one metric at a time (``evaluate`` names all four
``NonLLMStringSimilarity`` columns alike). A value is stored exactly as ragas returns it (note
that ``RougeScore`` returns the int ``0`` when either text has no token). A ragas exception would
be stored as ``{"error": "Type: message"}``; none of these pairs raises one.

``tests/test_string_metrics_vs_ragas.py`` compares evalcore against this file without ragas.
No network: analytics are off (``RAGAS_DO_NOT_TRACK``) and none of these metrics uses an LLM.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import sys
import warnings
from importlib.metadata import version
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
RAGAS_PYTHON = ROOT / ".bench" / "ragas-venv" / "bin" / "python"
OUTPUT = ROOT / "tests" / "data" / "ragas_string_scores.json"
LIBRARIES = ("ragas", "rapidfuzz", "sacrebleu", "rouge-score", "nltk")

# (evalcore spec, ragas constructor as text): the ragas side is built from the text with eval.
METRICS: list[tuple[str, str]] = [
    ("exact_match", "ExactMatch()"),
    ("string_presence", "StringPresence()"),
    ("string_similarity:measure=levenshtein", "NonLLMStringSimilarity(distance_measure=DistanceMeasure.LEVENSHTEIN)"),
    ("string_similarity:measure=hamming", "NonLLMStringSimilarity(distance_measure=DistanceMeasure.HAMMING)"),
    ("string_similarity:measure=jaro", "NonLLMStringSimilarity(distance_measure=DistanceMeasure.JARO)"),
    ("string_similarity:measure=jaro_winkler", "NonLLMStringSimilarity(distance_measure=DistanceMeasure.JARO_WINKLER)"),
    ("bleu", "BleuScore()"),
    *[
        (f"rouge:rouge_type={rouge_type}:mode={mode}", f"RougeScore(rouge_type={rouge_type!r}, mode={mode!r})")
        for rouge_type in ("rouge1", "rougeL")
        for mode in ("fmeasure", "precision", "recall")
    ],
]

CAFE_NFC = "caf\u00e9"
CAFE_NFD = "cafe\u0301"

# (id, what it covers, reference, response)
CASES: list[tuple[str, str, str, str]] = [
    # identical
    ("identical-word", "identical", "Paris", "Paris"),
    ("identical-sentence", "identical", "The capital of France is Paris.", "The capital of France is Paris."),
    (
        "identical-multi-sentence",
        "identical",
        "Your order has shipped. It will arrive on Monday. Thank you for waiting",
        "Your order has shipped. It will arrive on Monday. Thank you for waiting",
    ),
    ("identical-whitespace-only", "identical", "   ", "   "),
    # empty strings (evalcore: not applicable, see the test)
    ("empty-both", "empty", "", ""),
    ("empty-response", "empty", "The order was refunded.", ""),
    ("empty-reference", "empty", "", "The order was refunded."),
    ("empty-response-short-reference", "empty", "a", ""),
    # case
    ("case-word", "case", "Paris", "paris"),
    ("case-upper-sentence", "case", "the meeting is at noon", "THE MEETING IS AT NOON"),
    ("case-title", "case", "Golden Dragon restaurant", "golden dragon Restaurant"),
    # substrings
    ("substring-reference-in-response", "substring", "Paris", "The capital of France is Paris."),
    ("substring-response-in-reference", "substring", "The capital of France is Paris.", "Paris"),
    ("substring-prefix", "substring", "refund", "refund_order"),
    ("substring-case-differs", "substring", "paris", "The capital of France is Paris."),
    (
        "substring-whole-sentence-inside",
        "substring",
        "It will arrive on Monday.",
        "Good news. It will arrive on Monday. Bye",
    ),
    ("substring-near-miss", "substring", "Jade Palace", "JadePalace is booked"),
    # unicode and accents
    ("unicode-accent-vs-plain", "unicode", CAFE_NFC, "cafe"),
    ("unicode-nfc-vs-nfd", "unicode", CAFE_NFC, CAFE_NFD),
    ("unicode-nfc-identical", "unicode", "Cr\u00e8me br\u00fbl\u00e9e", "Cr\u00e8me br\u00fbl\u00e9e"),
    (
        "unicode-accents-sentence",
        "unicode",
        "Le na\u00efve r\u00e9sum\u00e9 est arriv\u00e9.",
        "Le naive resume est arrive.",
    ),
    ("unicode-german-sharp-s", "unicode", "Stra\u00dfe", "Strasse"),
    ("unicode-cjk", "unicode", "\u6771\u4eac\u306f\u6674\u308c\u3067\u3059", "\u6771\u4eac\u306f\u96e8\u3067\u3059"),
    (
        "unicode-cyrillic",
        "unicode",
        "\u041f\u0440\u0438\u0432\u0435\u0442 \u043c\u0438\u0440",
        "\u041f\u0440\u0438\u0432\u0435\u0442 \u0432\u0441\u0435\u043c",
    ),
    ("unicode-emoji", "unicode", "Done \U0001f44d", "Done"),
    ("unicode-mixed-latin", "unicode", "Meet at Caf\u00e9 M\u00fcller at 8pm.", "Meet at Cafe Muller at 8pm."),
    # Hamming: same and different lengths
    ("hamming-same-length", "hamming", "karolin", "kathrin"),
    ("hamming-same-length-2", "hamming", "1011101", "1001001"),
    ("hamming-longer-response", "hamming", "abc", "abcdef"),
    ("hamming-longer-reference", "hamming", "abcdef", "abc"),
    ("hamming-shifted", "hamming", "abcdef", "xabcdef"),
    ("hamming-very-different-lengths", "hamming", "ok", "The order was refunded and the customer was informed."),
    ("hamming-one-char", "hamming", "a", "b"),
    # multi-sentence texts split on ". "
    (
        "sentences-same-count",
        "sentences",
        "The cat sat on the mat. The dog ran in the park",
        "The cat sat on the mat. The dog ran to the park",
    ),
    (
        "sentences-fewer-in-response",
        "sentences",
        "The cat sat on the mat. The dog ran in the park",
        "The cat sat on the mat.",
    ),
    (
        "sentences-more-in-response",
        "sentences",
        "The cat sat on the mat.",
        "The cat sat on the mat. The dog ran in the park",
    ),
    (
        "sentences-swapped",
        "sentences",
        "The cat sat on the mat. The dog ran in the park",
        "The dog ran in the park. The cat sat on the mat",
    ),
    (
        "sentences-three-vs-three",
        "sentences",
        "Your booking is confirmed. The table is for four people. Dinner starts at 8pm",
        "Your booking is confirmed. The table is for two people. Dinner starts at 7pm",
    ),
    ("sentences-no-space-after-dot", "sentences", "First part.Second part", "First part. Second part"),
    (
        "sentences-abbreviation",
        "sentences",
        "Dr. Smith will call you at 5 p.m. tomorrow",
        "Dr. Smith will call you at 5 p.m. today",
    ),
    # punctuation
    ("punctuation-comma-bang", "punctuation", "Hello, world!", "Hello world"),
    ("punctuation-only", "punctuation", "...", "!!!"),
    ("punctuation-question", "punctuation", "Is it ready?", "Is it ready"),
    ("punctuation-quotes", "punctuation", 'He said "yes".', "He said 'yes'."),
    ("punctuation-hyphens", "punctuation", "state-of-the-art model", "state of the art model"),
    ("punctuation-newlines-tabs", "punctuation", "line one\nline two", "line one\tline two"),
    # numbers
    ("numbers-int-vs-float", "numbers", "42", "42.0"),
    ("numbers-decimal-comma", "numbers", "3.14", "3,14"),
    ("numbers-thousands", "numbers", "The total is $1,234.56", "Total: 1234.56 dollars"),
    (
        "numbers-dates",
        "numbers",
        "The flight leaves on 2024-05-01 at 08:30.",
        "The flight leaves on 2024-05-02 at 08:30.",
    ),
    ("numbers-words-vs-digits", "numbers", "three tickets", "3 tickets"),
    ("numbers-identical-digits", "numbers", "12345", "12345"),
    # stemming and word order (ROUGE)
    ("stemming", "rouge", "the runner was running quickly", "the runners run quick"),
    (
        "word-order",
        "rouge",
        "the quick brown fox jumps over the lazy dog",
        "the lazy dog jumps over the quick brown fox",
    ),
    ("repeated-words", "rouge", "the the the cat", "the cat cat cat"),
    # longer texts and partial overlap
    (
        "long-partial-overlap",
        "long",
        "I have cancelled your reservation at Jade Palace for Friday at 8pm. A refund of 20 dollars will reach "
        "your card within five business days. Is there anything else I can help with",
        "Your reservation at Jade Palace on Friday has been cancelled. You will get a refund of 20 dollars within "
        "5 business days. Anything else",
    ),
    ("long-vs-short", "long", "Yes.", "Yes, I have checked the order and everything is in place for Monday."),
    ("disjoint", "long", "The weather in Seoul is sunny.", "Your refund has been processed."),
    ("leading-trailing-space", "whitespace", "Paris", " Paris "),
    ("double-space", "whitespace", "the  order", "the order"),
]


def _ragas_python() -> None:
    """Make sure ragas and the metric libraries import here, re-running in the ragas venv if need be."""
    try:
        import ragas  # noqa: F401
    except ImportError:
        if RAGAS_PYTHON.exists() and Path(sys.executable) != RAGAS_PYTHON:
            os.execv(str(RAGAS_PYTHON), [str(RAGAS_PYTHON), __file__, *sys.argv[1:]])
        raise SystemExit(
            f"ragas is not installed here; run tests/bench/setup_ragas_env.sh, then {RAGAS_PYTHON}"
        ) from None
    missing = [name for name in ("rapidfuzz", "sacrebleu", "rouge_score") if _missing(name)]
    if missing:
        raise SystemExit(
            f"ragas' string metrics need {', '.join(missing)}: {sys.executable} -m pip install "
            "rapidfuzz==3.14.6 sacrebleu==2.6.0 rouge-score==0.1.2 nltk==3.10.4"
        )


def _missing(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is None


def _stored(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SystemExit(f"ragas returned {value!r} ({type(value).__name__}), not a number")
    if isinstance(value, float) and not math.isfinite(value):
        raise SystemExit(f"ragas returned {value!r}")
    return value


def main() -> int:
    os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
    _ragas_python()
    warnings.simplefilter("ignore")  # ragas' deprecation notices
    import ragas
    from ragas import EvaluationDataset, SingleTurnSample, evaluate
    from ragas.metrics import (  # noqa: F401  (used by eval)
        BleuScore,
        DistanceMeasure,
        ExactMatch,
        NonLLMStringSimilarity,
        RougeScore,
        StringPresence,
    )

    ids = [case[0] for case in CASES]
    if len(set(ids)) != len(ids):
        raise SystemExit("case ids must be distinct")
    samples = [SingleTurnSample(user_input="question", reference=ref, response=resp) for _, _, ref, resp in CASES]
    values: dict[str, list[Any]] = {}
    for spec, constructor in METRICS:
        metric = eval(constructor)
        column: list[Any] = []
        for sample in samples:
            try:
                column.append(_stored(asyncio.run(metric.single_turn_ascore(sample))))
            except Exception as exc:  # kept as data: the test then expects evalcore to fail too
                column.append({"error": f"{type(exc).__name__}: {exc}"})
        # ragas' evaluate() must agree with single_turn_ascore on every pair.
        result = evaluate(EvaluationDataset(samples=samples), metrics=[eval(constructor)], show_progress=False)
        for (case_id, *_), direct, row in zip(CASES, column, result.scores, strict=True):
            (via_evaluate,) = row.values()
            if isinstance(direct, dict):
                same = isinstance(via_evaluate, float) and math.isnan(via_evaluate)
            else:
                same = via_evaluate == direct
            if not same:
                raise SystemExit(f"{constructor} on {case_id}: evaluate() gave {via_evaluate!r}, directly {direct!r}")
        values[spec] = column

    cases = [
        {
            "id": case_id,
            "covers": covers,
            "reference": ref,
            "response": resp,
            "ragas": {spec: values[spec][i] for spec, _ in METRICS},
        }
        for i, (case_id, covers, ref, resp) in enumerate(CASES)
    ]
    head = {
        "about": "ragas' own values for its string metrics on (reference, response) pairs; made by "
        "tests/bench/make_ragas_string_refs.py, checked by tests/test_string_metrics_vs_ragas.py",
        "versions": {name: version(name) for name in LIBRARIES},
        "ragas_version": ragas.__version__,
        "metrics": {spec: constructor for spec, constructor in METRICS},
    }
    # One case a line: small, and a diff shows which pair changed.
    text = json.dumps(head, ensure_ascii=False, indent=2)[:-2] + ',\n  "cases": [\n'
    text += ",\n".join("    " + json.dumps(case, ensure_ascii=False) for case in cases)
    text += "\n  ]\n}\n"
    json.loads(text)  # still valid JSON
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUTPUT.relative_to(ROOT)}: {len(cases)} pairs x {len(METRICS)} metrics, ragas {ragas.__version__}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
