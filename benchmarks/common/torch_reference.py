"""The PyTorch reference trainer of the benchmarks: BERT's recipe in torch.

torch's AdamW (epsilon 1e-8, weight decay 0.01 off biases and LayerNorm
weights), linear warmup over 10% of the steps and linear decay to 0
(`transformers.get_linear_schedule_with_warmup`), gradient norm clipped at 1:
what tfbert's recipe does, so quality and speed compare like for like
(`bench_quality.py`, `bench_bucketing.py`, `bench_rerank.py`).
`torch_train` is the loop the quality references share.
"""

import math

NO_DECAY = ("bias", "LayerNorm.weight")


def adamw_with_warmup(model, learning_rate, total_steps, warmup_fraction=0.1):
    """`(optimizer, schedule)` for `total_steps` optimizer steps."""
    import torch
    import transformers

    params = list(model.named_parameters())
    optimizer = torch.optim.AdamW(
        [{"params": [p for k, p in params if not any(s in k for s in NO_DECAY)],
          "weight_decay": 0.01},
         {"params": [p for k, p in params if any(s in k for s in NO_DECAY)],
          "weight_decay": 0.0}], lr=learning_rate, eps=1e-8)
    schedule = transformers.get_linear_schedule_with_warmup(
        optimizer, int(warmup_fraction * total_steps), total_steps)
    return optimizer, schedule


def step(model, loss, optimizer, schedule):
    """One optimizer step on `loss`: backward, clip at 1, AdamW, schedule."""
    import torch

    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    schedule.step()
    optimizer.zero_grad()


def torch_train(model, n, recipe, seed, batch_loss):
    """The reference loop: every example once per epoch in a seeded order (the
    last partial batch kept), `batch_loss(rows)`, then one optimizer step; the
    last epoch is kept."""
    import torch

    batch, epochs = recipe["batch_size"], recipe["epochs"]
    optimizer, schedule = adamw_with_warmup(model, recipe["learning_rate"],
                                            math.ceil(n / batch) * epochs)
    generator = torch.Generator().manual_seed(seed)
    model.train()
    for _ in range(epochs):
        order = torch.randperm(n, generator=generator).numpy()
        for i in range(0, n, batch):
            step(model, batch_loss(order[i:i + batch]), optimizer, schedule)
    model.eval()
    return model
