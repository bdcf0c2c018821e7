#!/usr/bin/env python3
"""state_dict_example.py DATADIR: writes two whole-model state_dicts for the
tests of `rnnc run --weights-prefix`, without PyTorch (NumPy only).

model.state_dict.safetensors is laid out as safetensors.torch.save_file
writes `Model().state_dict()` for

    class Model(nn.Module):            # embedding -> 2-layer bi-LSTM -> linear
        embedding = nn.Embedding(10, 4)
        encoder.lstm = nn.LSTM(4, 6, num_layers=2, bidirectional=True, proj_size=3)
        fc = nn.Linear(6, 2)

The encoder's tensors are PyTorch's own: those of
lstm_2l_bi_proj.weights.safetensors (written by torch_reference.py), renamed
under `encoder.lstm.`, so rnnc's output can be checked against the
lstm_2l_bi_proj.io.safetensors that PyTorch wrote.  embedding.weight,
fc.weight and fc.bias are random numbers (random.Random(17)): rnnc ignores them.
seq2seq.state_dict.safetensors holds the same LSTM twice, under
`encoder.lstm.` and `decoder.lstm.`, so that no single prefix fits.
"""
import json
import random
import struct
import sys


def load(path):
    """{name: (shape, raw little-endian F32 bytes)}"""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    data = blob[8 + n:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32", (name, info["dtype"])
        lo, hi = info["data_offsets"]
        out[name] = (info["shape"], data[lo:hi])
    return out


def save(tensors, path):
    header, chunks, off = {}, [], 0
    for name in sorted(tensors):
        shape, raw = tensors[name]
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [off, off + len(raw)]}
        chunks.append(raw)
        off += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(chunks))


def uniform(rng, shape, bound):
    n = 1
    for d in shape:
        n *= d
    return (list(shape), struct.pack(f"<{n}f", *(rng.uniform(-bound, bound) for _ in range(n))))


def main(datadir):
    lstm = load(f"{datadir}/lstm_2l_bi_proj.weights.safetensors")
    rng = random.Random(17)
    model = {
        "embedding.weight": uniform(rng, (10, 4), 1.0),
        "fc.weight": uniform(rng, (2, 6), 0.4),
        "fc.bias": uniform(rng, (2,), 0.4),
    }
    model.update({f"encoder.lstm.{k}": v for k, v in lstm.items()})
    save(model, f"{datadir}/model.state_dict.safetensors")
    seq2seq = dict(model)
    seq2seq.update({f"decoder.lstm.{k}": v for k, v in lstm.items()})
    save(seq2seq, f"{datadir}/seq2seq.state_dict.safetensors")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/data")
