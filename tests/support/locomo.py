"""A made-up conversation in LoCoMo's layout, for the benchmarks' smoke tests (the real
data is for evaluation only)."""

from __future__ import annotations

from typing import Any

SAMPLE: dict[str, Any] = {
    "sample_id": "smoke-1",
    "conversation": {
        "speaker_a": "Ana",
        "speaker_b": "Ben",
        "session_1_date_time": "1:00 pm on 3 March, 2024",
        "session_1": [
            {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a grey kitten named Pixel."},
            {"speaker": "Ben", "dia_id": "D1:2", "text": "Lovely! I started learning the cello."},
            {"speaker": "Ana", "dia_id": "D1:3", "text": "My sister moved to Lisbon last week."},
        ],
        "session_2_date_time": "9:30 am on 10 March, 2024",
        "session_2": [
            {"speaker": "Ben", "dia_id": "D2:1", "text": "The cello recital went well."},
            {
                "speaker": "Ana",
                "dia_id": "D2:2",
                "text": "Look what Pixel did.",
                "blip_caption": "a photo of a broken vase on the floor",
            },
            {"speaker": "Ben", "dia_id": "D2:3", "text": "I booked a trip to visit Lisbon."},
        ],
    },
    "qa": [
        {"question": "What is the name of Ana's kitten?", "evidence": ["D1:1"], "category": 4},
        {"question": "Which instrument does Ben play?", "evidence": ["D1:2; D2:1"], "category": 1},
        {"question": "Where did Ana's sister move?", "evidence": ["D1:3", "D9:9"], "category": 2},
        {"question": "What did Ben's cat break?", "evidence": ["D"], "category": 5},
    ],
}
