"""Chat templates: a premise and a domain premise rendered as an instruct model reads them, the way
lm-evaluation-harness 0.4 renders a request with ``--apply_chat_template`` (``Task.fewshot_context``,
``HFLM.apply_chat_template``).

One chat history per request:

* a **system turn**: ``system_instruction`` (lm-eval's ``--system_instruction``) and the task's description (a
  template's ``preamble``) joined by ``"\\n\\n"`` (no delimiter where either side already has whitespace there); left
  out when both are empty, so that the template's own default stands (SmolLM2's "You are a helpful AI assistant named
  SmolLM, trained by Hugging Face"). A template that refuses a system turn renders without it, with a warning, as
  lm-eval does;
* each **few-shot example** as a user turn (its question) and an assistant turn (its answer without the target
  delimiter): ``fewshot_as_multiturn``, lm-eval's default with a chat template; otherwise the examples are written
  out in front of the question in the one user turn;
* the **question** as the last user turn, then the **generation prompt** (``add_generation_prompt=True``; a
  ``gen_prefix`` is instead an open assistant turn the answer continues).

The template (Jinja, rendered by the tokenizer: ``apply_chat_template(tokenize=False)``) turns that history into the
context; the answer is scored right after it *without the target delimiter* (lm-eval drops it under a chat template,
so an lm-eval log's ``arg_1`` is ``"A"``, not ``" A"``), and the context's trailing ``"\\n"`` moves onto the answer by
the whitespace rule of :mod:`surfacelab.text`, as lm-eval moves it. A domain premise is rendered the same way -- the
same system turn and generation prompt, no few-shot turns (a plain domain premise has none either) -- so that DC-PMI
compares a chat-formatted premise with a chat-formatted domain premise. A template that writes the BOS token itself
gets no second one (``text.encode``, lm-eval's rule).

>>> chat = resolve(lm, "{% for m in messages %}<{{ m.role }}>{{ m.content }}\\n{% endfor %}"
...                    "{% if add_generation_prompt %}<assistant>\\n{% endif %}")
>>> render(lm, chat, "Why?")
'<user>Why?\\n<assistant>\\n'
>>> render(lm, ChatTemplate(chat.template, system_instruction="Be brief."), "Why?", description="Physics.")
'<system>Be brief.\\n\\nPhysics.\\n<user>Why?\\n<assistant>\\n'
"""

from __future__ import annotations

import hashlib
import warnings
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Sequence

from jinja2 import TemplateError

from .text import check_text

if TYPE_CHECKING:
    from .models import LM
    from .tasks import Item, Template

#: What joins the system instruction and the task's description in the system turn (lm-eval's few-shot delimiter).
SYSTEM_JOIN = "\n\n"
#: A stand-in user turn: what the template writes before it is the system turn and the start of the first user turn.
_PROBE = "\x00surfacelab\x00"


@dataclass(frozen=True)
class ChatTemplate:
    """How prompts are rendered for a chat (instruct) model: lm-eval's ``--apply_chat_template``,
    ``--system_instruction`` and ``--fewshot_as_multiturn``.

    Attributes:
        template: the Jinja template's text, or the name of one of the tokenizer's templates; None: the tokenizer's
            own (``resolve`` fills in the text).
        system_instruction: the system turn's text; None: no system turn unless the task has a description (the
            template's own default, if it has one, then stands).
        fewshot_as_multiturn: few-shot examples as user / assistant turns; False: written out in the one user turn.
    """

    template: str | None = None
    system_instruction: str | None = None
    fewshot_as_multiturn: bool = True

    @property
    def sha(self) -> str:
        """sha256 of the template's text (lm-eval's ``chat_template_sha``); "" before ``resolve``."""
        return hashlib.sha256(self.template.encode("utf-8")).hexdigest() if self.template else ""

    def meta(self) -> dict[str, Any]:
        """What a result records of it (JSON): ``template`` (the text), ``sha``, ``system_instruction``,
        ``fewshot_as_multiturn``."""
        return {"template": self.template, "sha": self.sha, "system_instruction": self.system_instruction,
                "fewshot_as_multiturn": self.fewshot_as_multiturn}


def own_template(lm: LM) -> str | None:
    """The text of the tokenizer's own chat template (its "default" one when it has several), or None."""
    try:
        return lm.tokenizer.get_chat_template()
    except (ValueError, AttributeError):
        return None


def check_choice(value: Any, name: str = "chat_template") -> None:
    """A ``TypeError`` naming ``name`` unless ``value`` is what ``resolve`` takes (None, a bool, text, a
    ``ChatTemplate``)."""
    if not (value is None or isinstance(value, (bool, str, ChatTemplate))):
        raise TypeError(f"{name}: expected True, a template's text or a ChatTemplate, got {type(value).__name__}")


def resolve(lm: LM, value: Any, name: str = "chat_template") -> ChatTemplate | None:
    """The chat template ``value`` asks for, its text filled in and checked to render; None for None / False.

    Args:
        lm: the model whose tokenizer renders (its special tokens are the template's variables).
        value: True (the tokenizer's own template), a template's text or the name of one of the tokenizer's templates,
            a ``ChatTemplate``, or None / False (no chat template: plain text).
        name: the argument's name in messages.

    Raises:
        ValueError: naming ``name``: the tokenizer has no chat template (for True), the text is no Jinja template,
            the template does not render a user turn; or a bad ``system_instruction`` / ``fewshot_as_multiturn``.
    """
    check_choice(value, name)
    if value is None or value is False:
        return None
    if value is True:
        spec = ChatTemplate()
    elif isinstance(value, str):
        spec = ChatTemplate(template=value)
    else:
        spec = value
    if spec.system_instruction is not None:
        check_text(spec.system_instruction, f"{name}.system_instruction")
    if not isinstance(spec.fewshot_as_multiturn, bool):
        raise TypeError(f"{name}.fewshot_as_multiturn: expected True or False, got {spec.fewshot_as_multiturn!r}")
    named = lm.tokenizer.chat_template if isinstance(lm.tokenizer.chat_template, dict) else {}
    if spec.template is None:
        text = own_template(lm)
        if text is None:
            raise ValueError(f"{name}: the tokenizer of {lm.name!r} has no chat template (its chat_template is not "
                             f"set): pass the template's text as {name}=... (on the command line: --chat-template "
                             f"FILE), or leave {name} out to score plain text")
    elif spec.template in named:
        text = named[spec.template]
    else:
        text = check_text(spec.template, name, allow_empty=False)
        if "{{" not in text and "{%" not in text:
            more = f" nor one of the tokenizer's templates ({', '.join(sorted(named))})" if named else ""
            raise ValueError(f"{name}: {text[:60]!r} is neither a Jinja chat template{more}: pass True for the "
                             "tokenizer's own")
    chat = replace(spec, template=text)
    try:
        _apply(lm, chat, [{"role": "user", "content": _PROBE}], None)
    except (TemplateError, ValueError, TypeError) as err:  # Jinja's (syntax, raise_exception) and the tokenizer's
        raise ValueError(f"{name}: the chat template does not render a user turn: {type(err).__name__}: "
                         f"{err}") from None
    return chat


def _apply(lm: LM, chat: ChatTemplate, messages: list[dict[str, str]], gen_prefix: str | None) -> str:
    """The tokenizer's rendering of ``messages`` (as ``HFLM.apply_chat_template``: the generation prompt, or the
    open assistant turn ``gen_prefix``)."""
    if gen_prefix:
        messages = [*messages, {"role": "assistant", "content": gen_prefix}]
    return lm.tokenizer.apply_chat_template(messages, chat_template=chat.template, tokenize=False,
                                            add_generation_prompt=not gen_prefix,
                                            continue_final_message=bool(gen_prefix))


def system_turn(chat: ChatTemplate, description: str = "", join: str = SYSTEM_JOIN) -> str:
    """The system turn's text: the system instruction and the description, joined by ``join`` unless either side
    has whitespace there (lm-eval's ``maybe_delimit`` with the task's few-shot delimiter)."""
    first, second = chat.system_instruction or "", description or ""
    if not first or not second:
        return first or second
    return first + ("" if first[-1].isspace() or second[0].isspace() else join) + second


def render(lm: LM, chat: ChatTemplate, user: str, *, description: str = "", shots: Sequence[tuple[str, str]] = (),
           shots_text: str = "", gen_prefix: str | None = None, join: str = SYSTEM_JOIN) -> str:
    """The context an instruct model reads for ``user`` (a premise or a domain premise).

    Args:
        lm: the model whose tokenizer renders; chat: a resolved ``ChatTemplate`` (``resolve``).
        user: the last user turn.
        description: the task's description, in the system turn after the system instruction (``join`` between).
        shots: few-shot examples as (question, answer without the target delimiter), one user and one assistant
            turn each (``fewshot_as_multiturn``).
        shots_text: the same examples written out, put in front of ``user`` when not ``fewshot_as_multiturn``.
        gen_prefix: an open assistant turn the answer continues, instead of the generation prompt.
    """
    system = system_turn(chat, description, join)
    turns: list[dict[str, str]] = []
    if shots and chat.fewshot_as_multiturn:
        for question, answer in shots:
            turns += [{"role": "user", "content": question}, {"role": "assistant", "content": answer}]
    elif shots:
        user = shots_text + user
    turns.append({"role": "user", "content": user})
    if not system:
        return _apply(lm, chat, turns, gen_prefix)
    try:
        return _apply(lm, chat, [{"role": "system", "content": system}, *turns], gen_prefix)
    except TemplateError as err:  # the template's refusal (raise_exception), caught as lm-eval catches it
        warnings.warn(f"chat_template: the template refuses a system turn ({type(err).__name__}: {err}); rendered "
                      "without it, as lm-eval does", stacklevel=2)
        return _apply(lm, chat, turns, gen_prefix)


def frame(lm: LM, chat: ChatTemplate, **kwargs: Any) -> tuple[str, str]:
    """What the template writes before the first user turn's text and after the last one's (``kwargs``: those of
    ``render`` but ``user`` and ``shots``): every zero-shot request of a task starts and ends so (a log's contexts
    are checked against them)."""
    probe = render(lm, chat, _PROBE, **kwargs)
    at = probe.index(_PROBE)
    return probe[:at], probe[at + len(_PROBE):]


def contexts(lm: LM, chat: ChatTemplate | None, premise: str, domain_premise: str | None) -> tuple[str, str | None]:
    """The premise and the domain premise as the model reads them (unchanged without a chat template)."""
    if chat is None:
        return premise, domain_premise
    return render(lm, chat, premise), None if domain_premise is None else render(lm, chat, domain_premise)


def without_delimiter(option: str, delimiter: str) -> str:
    """An option as scored under a chat template: without the target delimiter it starts with."""
    return option[len(delimiter):] if delimiter and option.startswith(delimiter) else option


def render_item(lm: LM, chat: ChatTemplate, item: Item, template: Template) -> Item:
    """``item`` as scored under ``chat``: its premise (each option's, on a flipped task) and domain premise rendered,
    its options without the template's target delimiter; ``meta["chat_user"]`` keeps the premise and domain premise
    as rendered without the chat template.

    The task's preamble (lm-eval's description) goes into the system turn and the few-shot examples into turns of
    their own (``render``); an item made by hand, without the fields a template renders, is one user turn.
    """
    fields = item.meta.get("fields")
    description, body, shots = "", item.premise, []
    if fields is not None:
        description, body = template.render_preamble(fields), template.render_body(fields)
        delim = template.target_delimiter
        shots = [(template.render_body(f), without_delimiter(template.render_options(f)[template.gold_index(f)], delim))
                 for f in item.meta.get("shot_fields") or []]

    def one(user: str) -> str:
        return render(lm, chat, user, description=description, shots=shots,
                      shots_text=item.meta.get("fewshot_prefix", ""))

    per_option = None if item.premise_per_option is None else [one(p) for p in item.premise_per_option]
    return replace(item, premise=one(body) if per_option is None else item.premise,
                   options=[without_delimiter(o, template.target_delimiter) for o in item.options],
                   domain_premise=None if item.domain_premise is None else render(lm, chat, item.domain_premise,
                                                                                  description=description),
                   premise_per_option=per_option,
                   meta={**item.meta, "chat_user": {"premise": item.premise, "domain_premise": item.domain_premise}})
