"""The instruction-smell detector: does a memory's text carry instructions for the AI that will read
it, rather than a record of practice? (docs/security/memory-poisoning.md, "The detector".)

A memory is injected into teammates' agents. Text in it that gives the agent orders — override
phrases, fake system markup, "do not tell the user", "send ~/.ssh/id_rsa to …", ``curl … | sh`` from
an unknown host, hidden or encoded versions of these, image URLs that carry data away — turns the
bank into a persistent prompt injection. ``instruction_smells`` reads all the fields of one memory
together and returns each smell with its rule, a reason a reviewer reads, the field and the span.

Design rules, each with a reason:

* Precision first, on purpose-built look-alikes: coding memories legitimately mention installers piped
  into ``sh``, ssh keys, tokens, ``.env`` files, webhooks, the system prompt of an LLM app, base64 in
  code, and give orders to the *developer* ("always run the migrations first"). Each rule needs the
  form that gives the order to an AI or does the harm, and each has a look-alike that must pass (the
  rule table in the docs, the tests). Measured on a labelled set (bench/poisoning.py).
* The text a model reads, not the bytes: rules run on a folded copy (``folding``) without invisible
  characters, with look-alike letters and full-width forms mapped to Latin, accents dropped, whitespace
  runs made one; the hidden-text rules report the disguise itself.
* Linear time: a memory is up to ~20 KB and fully attacker-controlled. Every repetition is bounded or
  over a character class disjoint from what follows; context checks look at fixed windows; decoding
  happens once per candidate stretch.
* Stdlib only, no Django: runs in a view, the worker, the bench, a CLI.

The modules: ``catalogue`` (the rule table and what patterns are built from), ``folding``, ``context``
(negation, quoted examples, code spans), one module per family — ``addressed`` and ``languages``,
``exfiltration``, ``remote_code``, ``hidden``, ``beacons`` — and ``engine``, which runs them.
"""

from reasoningbank.poisoning.catalogue import RULES, Rule
from reasoningbank.poisoning.engine import Smell, instruction_smells
from reasoningbank.poisoning.remote_code import WELL_KNOWN_INSTALLERS

__all__ = ["RULES", "WELL_KNOWN_INSTALLERS", "Rule", "Smell", "instruction_smells"]

__pure__ = True  # Django-free (tests/test_import_contracts.py)
