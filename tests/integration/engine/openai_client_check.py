"""Talks to a running musacoder OpenAI-compatible server with the official `openai` client (chat,
streaming, n > 1, logprobs) and sends bad requests with urllib, then checks the server is still up.

  openai_client_check.py --base-url http://127.0.0.1:PORT/v1 --model NAME --context N

Prints one JSON line per check; exit 0 when all pass, 1 otherwise.
"""
import argparse
import json
import sys
import urllib.error
import urllib.request

import openai

failures = []


def check(name, ok, detail=""):
    print(json.dumps({"check": name, "ok": bool(ok), "detail": str(detail)[:300]}))
    if not ok:
        failures.append(name)


def raw_post(url, body, content_type="application/json"):
    req = urllib.request.Request(url, data=body, headers={"Content-Type": content_type}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except (ConnectionError, urllib.error.URLError) as e:
        return None, str(e).encode()


def expect_error(name, url, body, want_status):
    status, payload = raw_post(url, body)
    try:
        err = json.loads(payload)["error"]
        ok = status == want_status and isinstance(err.get("message"), str)
    except Exception:
        ok = False
    check(name, ok, f"status={status} body={payload[:200]!r}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--base-url", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--context", type=int, required=True)
    a = p.parse_args()
    client = openai.OpenAI(base_url=a.base_url, api_key="unused", max_retries=0, timeout=120)

    models = client.models.list()
    check("models", [m.id for m in models.data] == [a.model], models)

    chat = client.chat.completions.create(model=a.model, messages=[{"role": "user", "content": "Write a kernel."}],
                                          max_tokens=12, temperature=0.7, seed=3, logprobs=True, top_logprobs=2)
    c = chat.choices[0]
    check("chat", isinstance(c.message.content, str) and c.message.role == "assistant"
          and c.finish_reason in ("stop", "length") and chat.usage.completion_tokens > 0, chat)
    check("chat logprobs", c.logprobs is not None and len(c.logprobs.content) == chat.usage.completion_tokens
          and all(t.logprob <= 0 and len(t.top_logprobs) == 2 for t in c.logprobs.content), c.logprobs)
    again = client.chat.completions.create(model=a.model, messages=[{"role": "user", "content": "Write a kernel."}],
                                           max_tokens=12, temperature=0.7, seed=3)
    check("chat seed reproducible", again.choices[0].message.content == c.message.content,
          (again.choices[0].message.content, c.message.content))

    stream = client.chat.completions.create(model=a.model, messages=[{"role": "user", "content": "Write a kernel."}],
                                            max_tokens=12, temperature=0.7, seed=3, stream=True)
    text, finish = "", None
    for chunk in stream:
        for ch in chunk.choices:
            text += ch.delta.content or ""
            finish = ch.finish_reason or finish
    check("chat stream equals non-stream", text == c.message.content and finish == c.finish_reason, (text, finish))

    comp = client.completions.create(model=a.model, prompt="def forward(self, x):", max_tokens=8, n=3,
                                     temperature=1.0, seed=11, logprobs=1)
    check("completions n=3", len(comp.choices) == 3 and sorted(ch.index for ch in comp.choices) == [0, 1, 2], comp)
    check("completions logprobs", all(ch.logprobs is not None and len(ch.logprobs.token_logprobs) > 0
                                      and all(lp <= 0 for lp in ch.logprobs.token_logprobs) for ch in comp.choices), comp)
    streamed = {}
    for chunk in client.completions.create(model=a.model, prompt="def forward(self, x):", max_tokens=8, n=3,
                                           temperature=1.0, seed=11, stream=True):
        for ch in chunk.choices:
            streamed[ch.index] = streamed.get(ch.index, "") + ch.text
    check("completions stream n=3", all(streamed.get(ch.index) == ch.text for ch in comp.choices), (streamed, comp))

    url = a.base_url + "/completions"
    good = {"model": a.model, "prompt": "x", "max_tokens": 2}
    expect_error("unknown model", url, json.dumps({**good, "model": "nope"}).encode(), 404)
    expect_error("negative max_tokens", url, json.dumps({**good, "max_tokens": -5}).encode(), 400)
    expect_error("malformed json", url, b'{"model": ', 400)
    expect_error("n=10000", url, json.dumps({**good, "n": 10000}).encode(), 400)
    expect_error("prompt longer than the context", url, json.dumps({**good, "prompt": [5] * (a.context + 10)}).encode(), 400)
    expect_error("wrong types", url, json.dumps({**good, "temperature": "hot"}).encode(), 400)
    status, payload = raw_post(url, b'{"model": "' + a.model.encode() + b'", "prompt": "' + b"a" * (50 << 20) + b'"}')
    check("50 MB body", status == 413 or status is None, f"status={status} {payload[:200]!r}")
    if status is not None:
        check("50 MB body is a JSON error", "error" in json.loads(payload), payload[:200])

    after = client.completions.create(model=a.model, prompt="still up?", max_tokens=2)
    check("server still up", len(after.choices) == 1, after)
    with urllib.request.urlopen(a.base_url.replace("/v1", "") + "/healthz", timeout=10) as r:
        check("healthz", r.status == 200)
    with urllib.request.urlopen(a.base_url.replace("/v1", "") + "/metrics", timeout=10) as r:
        text = r.read().decode()
        check("metrics", "musacoder_engine_generation_tokens_total" in text and 'status="404"' in text, text[:300])
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
