"""A varied text written from a fixed seed, for the tokenizer oracles: prose, several
scripts (Latin with diacritics, Greek, Cyrillic, Arabic, Hebrew, Devanagari, Thai, CJK,
Hangul), combining marks and decomposed accents, digits in long runs, whitespace runs of
spaces, tabs, newlines and carriage returns, non-breaking and other Unicode spaces, emoji
with skin tones and zero-width joiners, contractions in both cases, punctuation."""
import random

SEED = 38
TARGET_BYTES = 1_100_000  # the issue asks for at least 1 MB

WORDS = ("the model trains on many devices while its pipeline keeps every stage busy and "
         "memory stays within what each card holds").split()
SCRIPTS = [
    "àéîõüçñßøåæœ", "αβγδεζηθικλμνξοπρστυφχψω", "абвгдежзийклмнопрстуфхцчшщыэюя",
    "ابتثجحخدذرزسشصضطظعغفقكلمنهوي", "אבגדהוזחטיכלמנסעפצקרשת", "अआइईउऊएऐओऔकखगघचछजझटठडढणतथदधनपफबभमयरलवशसह",
    "กขคงจฉชซญดตถทนบปผพฟภมยรลวศสหอฮ", "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年",
    "가나다라마바사아자차카타파하한국어문장",
]
COMBINING = ["\u0301", "\u0308", "\u0327", "\u20dd", "\u0489"]
# Letters with accents as two code points, which NFC composes into one.
DECOMPOSED = ["e\u0301", "a\u0308", "c\u0327", "n\u0303", "A\u030a", "\u1100\u1161"]
SPACES = [" ", "  ", "   ", "\t", "\t\t", "\n", "\n\n", "\r\n", " \n", "\u00a0", "\u2003", "\u3000",
          " \t ", "\n   \n"]
EMOJI = ["😀", "👍🏽", "👩‍💻", "👨‍👩‍👧‍👦", "🏳️‍🌈", "❤️", "🇨🇭", "🤖", "✨", "1️⃣"]
CONTRACTIONS = ["it's", "don't", "we're", "you've", "I'm", "we'll", "he'd", "IT'S", "DON'T",
                "We'Re", "o'clock", "'s", "''", "'"]
PUNCTUATION = [".", ",", "!?", "...", "—", "«»", "()", "[]", "{}", "#", "@", "&&", "->", "::",
               "\"", "`", "~", "%", "$", "€", "¿", "¡", "・", "。", "、"]


def word(rng):
    kind = rng.random()
    if kind < 0.45:
        w = rng.choice(WORDS)
        return w.capitalize() if rng.random() < 0.15 else w
    if kind < 0.65:
        letters = rng.choice(SCRIPTS)
        w = "".join(rng.choice(letters) for _ in range(rng.randint(1, 9)))
        if rng.random() < 0.1:
            w += rng.choice(COMBINING)
        if rng.random() < 0.1:
            w += rng.choice(DECOMPOSED)
        return w
    if kind < 0.75:
        return str(rng.randint(0, 10 ** rng.randint(1, 14)))
    if kind < 0.83:
        return rng.choice(CONTRACTIONS)
    if kind < 0.92:
        return rng.choice(PUNCTUATION)
    return "".join(rng.choice(EMOJI) for _ in range(rng.randint(1, 3)))


def documents(rng):
    total = 0
    while total < TARGET_BYTES:
        parts = []
        for _ in range(rng.randint(5, 400)):
            parts.append(word(rng))
            parts.append(rng.choice(SPACES) if rng.random() < 0.3 else " ")
        text = "".join(parts)
        if rng.random() < 0.2:
            text = rng.choice(SPACES) + text  # leading whitespace
        total += len(text.encode("utf-8"))
        yield text


def varied_documents():
    """The documents, the same on every call."""
    return list(documents(random.Random(SEED)))
