"""The addressed-to-an-AI rules in other languages: attacks are translated, and a model obeys a
Spanish or Chinese order as readily as an English one. Spanish, French, German, Portuguese, Italian,
Dutch, Polish, Russian, Chinese (simplified and traditional), Japanese and Korean: override phrases,
secrecy towards the user, a new persona or mode.

The folded text has no accents on Latin letters ("instrucciones", "precedentes", "instrucoes"), so
the patterns carry none; an attacker who writes without accents is matched the same. Each override
needs its qualifier (previous, all, the system's …): "ignora las reglas de ESLint para los archivos
generados" is ordinary advice."""

from __future__ import annotations

from collections.abc import Iterator

from reasoningbank.poisoning.catalogue import SEP, Hit, words_upto
from reasoningbank.poisoning.context import negated, quoted_mention
from reasoningbank.poisoning.phrases import Phrase, Text, phrase

__pure__ = True  # Django-free (tests/test_import_contracts.py)


def _override(verbs: str, nouns: str, qualifiers: str, before: str = "") -> list[Phrase]:
    """verb … noun … qualifier ("ignora las instrucciones anteriores") and verb … qualifier … noun
    ("ignoriere alle vorherigen Anweisungen", "ignora todas las instrucciones"). The nouns are the keys
    (each a plain word here)."""
    first = before or qualifiers
    keys = tuple(noun.split("[")[0] for noun in nouns.split("|"))
    return [
        phrase(rf"\b(?:{verbs}){SEP}{words_upto(2)}(?:{nouns}){SEP}{words_upto(1)}(?:{qualifiers})\b", keys),
        phrase(rf"\b(?:{verbs}){SEP}{words_upto(2)}(?:{first}){SEP}{words_upto(2)}(?:{nouns})\b", keys),
    ]


_LATIN_OVERRIDE = [
    # Spanish
    *_override(
        r"ignora|ignore|ignoren|ignorad|olvida|olvide|olviden|descarta|descarte|omite|omita|haz caso omiso de|"
        r"no sigas|deja de seguir|no hagas caso a",
        r"instrucciones|instruccion|indicaciones|directrices|ordenes|reglas|normas|prompt|consignas",
        r"anteriores|previas|de antes|del sistema|originales|iniciales|de arriba|precedentes",
        r"todas|todo|tus|sus|las anteriores",
    ),
    # French
    *_override(
        r"ignore|ignorez|ignorer|oublie|oubliez|oublier|ne tiens pas compte d\w{0,8}|ne tenez pas compte d\w{0,8}|"
        r"fais abstraction d\w{0,8}|faites abstraction d\w{0,8}|n'obeis plus a|n'obeissez plus a",
        r"instructions|consignes|directives|regles|indications|prompt|ordres",
        r"precedentes|anterieures|ci-dessus|du systeme|initiales|d'origine|d'avant|systeme",
        r"toutes|tous|tes|vos|les precedentes",
    ),
    # German
    *_override(
        r"ignoriere|ignorier|ignoriert|ignorieren sie|vergiss|vergesst|vergessen sie|missachte|missachten sie|"
        r"uberschreibe|befolge nicht|befolgen sie nicht",
        r"anweisungen|anweisung|instruktionen|vorgaben|regeln|befehle|richtlinien|anordnungen|systemprompt|prompt",
        r"von vorher|von oben|des systems|von zuvor",
        r"alle|vorherigen|bisherigen|obigen|vorigen|fruheren|deine|ihre|ursprunglichen|vorhergehenden|sämtliche|samtliche",
    ),
    # Portuguese
    *_override(
        r"ignore|ignora|ignorem|esqueca|esquece|esquecam|desconsidere|desconsidera|despreze|nao siga|pare de seguir",
        r"instrucoes|instrucao|orientacoes|diretrizes|regras|ordens|comandos|prompt",
        r"anteriores|previas|acima|do sistema|originais|iniciais",
        r"todas|todos|suas|tuas|as anteriores",
    ),
    # Italian
    *_override(
        r"ignora|ignorate|dimentica|dimenticate|non seguire|trascura",
        r"istruzioni|indicazioni|direttive|regole|ordini|prompt",
        r"precedenti|di prima|del sistema|originali|iniziali|sopra",
        r"tutte|tutti|le tue|le precedenti",
    ),
    # Dutch
    *_override(
        r"negeer|negeren|vergeet|vergeten",
        r"instructies|aanwijzingen|opdrachten|regels|richtlijnen|prompt",
        r"van hiervoor|van het systeem|hierboven",
        r"alle|vorige|eerdere|voorgaande|je|jouw|oorspronkelijke",
    ),
    # Polish
    *_override(
        r"zignoruj|ignoruj|zapomnij|pomin",
        r"instrukcje|instrukcji|polecenia|polecen|zasady|regu[lł]y|prompt",
        r"wcześniejsze|wczesniejsze|poprzednie|powyzsze|systemowe",
        r"wszystkie|poprzednie|wczesniejsze|twoje|swoje",
    ),
]
_LATIN_SECRECY_KEYS = (
    "usuari", "utilisat", "usager", "humain", "humano", "benutzer", "nutzer", "anwender", "user", "utente",
    "gebruiker", "uzytkown", "użytkown", "utilizador",
)  # fmt: skip
_LATIN_SECRECY = [
    phrase(
        r"\bno (?:le )?(?:digas|diga|informes|informe|menciones|mencione|cuentes|cuente|avises|avise|reveles|revele)"
        r"(?: nada)?(?: de esto)? (?:al|a la|a los) (?:usuario|usuaria|usuarios|humano)",
        _LATIN_SECRECY_KEYS,
    ),
    phrase(
        r"\bsin (?:decirle|decir|avisar|informar|notificar)(?:le)?(?: nada)? (?:al|a la) (?:usuario|usuaria)",
        _LATIN_SECRECY_KEYS,
    ),
    phrase(
        r"\bne (?:le |lui |rien )?(?:dis|dites|mentionne|mentionnez|signale|signalez|revele|revelez|previens|prevenez|"
        r"montre|montrez)(?: rien)? (?:pas|jamais|rien)(?: ceci| cela| ca)? (?:a |a l'|au |aux )?(?:l')?"
        r"(?:utilisateur|utilisatrice|usager|humain)",
        _LATIN_SECRECY_KEYS,
    ),
    phrase(
        r"\bsans (?:le dire|prevenir|informer|avertir|en informer|en parler)(?: a)? (?:a )?l'?"
        r"(?:utilisateur|utilisatrice|usager)",
        _LATIN_SECRECY_KEYS,
    ),
    phrase(
        r"\b(?:sag|sage|erzahl|erzahle|verrate|teile|zeige|sagen sie|erzahlen sie)(?: es| das| dies| davon)? "
        r"(?:dem|den) (?:benutzer|nutzer|anwender|user)n? (?:nichts|nicht|kein\w{0,8})",
        _LATIN_SECRECY_KEYS,
    ),
    phrase(
        r"\bohne (?:den|dem) (?:benutzer|nutzer|anwender)n? (?:zu )?"
        r"(?:informieren|benachrichtigen|warnen|davon zu erzahlen)",
        _LATIN_SECRECY_KEYS,
    ),
    phrase(
        r"\b(?:der|die) (?:benutzer|nutzer|anwender)(?:in)? (?:darf|soll|muss) (?:davon )?(?:nichts|nie) "
        r"(?:wissen|erfahren|merken|sehen)",
        _LATIN_SECRECY_KEYS,
    ),
    phrase(
        r"\bnao (?:conte|contes|diga|digas|informe|mencione|avise|revele|mostre)(?: nada)?(?: disso)? "
        r"(?:ao|a|para o|para a) (?:usuario|usuaria|utilizador)",
        _LATIN_SECRECY_KEYS,
    ),
    phrase(
        r"\bsem (?:avisar|informar|contar|dizer|notificar)(?: ao| o| a)? (?:usuario|usuaria|utilizador)",
        _LATIN_SECRECY_KEYS,
    ),
    phrase(
        r"\bnon (?:dire|dirlo|informare|menzionare|rivelare|avvisare)(?: nulla| niente)? (?:all'|al |a )?"
        r"(?:utente|l'utente)",
        _LATIN_SECRECY_KEYS,
    ),
    phrase(r"\b(?:zeg|vertel|meld)(?: dit| het)? (?:niets|niet) (?:tegen|aan) de gebruiker", _LATIN_SECRECY_KEYS),
    phrase(
        r"\bnie (?:mow|informuj|wspominaj|mówi|mowi)(?: o tym)? (?:uzytkownikowi|użytkownikowi)", _LATIN_SECRECY_KEYS
    ),
]
_LATIN_PERSONA_KEYS = (
    "eres", "seras", "actua", "tu es", "vous etes", "maintenant", "du bist", "ab jetzt", "ab sofort", "voce",
    "a partir de", "ora sei", "adesso sei", "da ora", "je bent", "vanaf nu", "modo ", "mode ", "entwicklermodus",
)  # fmt: skip
_LATIN_PERSONA = [
    phrase(
        r"\b(?:ahora eres|a partir de ahora (?:eres|seras|actuaras|responderas|ignoraras|actua|responde))\b",
        _LATIN_PERSONA_KEYS,
    ),
    phrase(
        r"\b(?:tu es|vous etes) (?:maintenant|desormais|dorenavant)\b|\ba partir de maintenant,? (?:tu|vous) "
        r"(?:es|etes|vas|allez|dois|devez|ignore|agis|agissez|reponds|repondez)\b",
        _LATIN_PERSONA_KEYS,
    ),
    phrase(
        r"\bdu bist (?:jetzt|nun|ab sofort|ab jetzt|von nun an)\b|"
        r"\bab (?:jetzt|sofort) (?:bist du|wirst du|antwortest du|ignorierst du)\b",
        _LATIN_PERSONA_KEYS,
    ),
    phrase(
        r"\b(?:voce agora e|voce e agora|a partir de agora,? (?:voce|tu) (?:e|es|sera|vai|deve|ignora))\b",
        _LATIN_PERSONA_KEYS,
    ),
    phrase(r"\b(?:ora sei|adesso sei|da ora in poi (?:sei|sarai|rispondi|ignora))\b", _LATIN_PERSONA_KEYS),
    phrase(r"\b(?:je bent nu|vanaf nu ben je)\b", _LATIN_PERSONA_KEYS),
    phrase(
        r"\bmodo (?:desarrollador|desenvolvedor|sin restricciones|sem restricoes|dios)\b|"
        r"\bmode (?:developpeur|sans restriction)\w{0,8}|\bentwicklermodus\b",
        _LATIN_PERSONA_KEYS,
    ),
]

_RU_OVERRIDE_VERB = (
    r"(?:проигнорируй|игнорируй|проигнорируйте|игнорируйте|забудь|забудьте|не обращай внимания на|"
    r"не обращайте внимания на|отбрось|отбросьте|не следуй|не выполняй)"
)
_RU_QUALIFIER = (
    r"(?:все|всё|bce|предыдущ\w{0,8}|прежн\w{0,8}|прошл\w{0,8}|ранее данн\w{0,8}|вышеуказанн\w{0,8}|"
    r"изначальн\w{0,8}|системн\w{0,8}|свои|твои|ваши)"
)
_RU_NOUNS = ("инструкци", "указани", "правил", "команд", "промпт", "установк", "ограничени", "директив")
_RU_NOUN = "(?:" + "|".join(noun + r"\w{0,8}" for noun in _RU_NOUNS) + ")"
_CJK = [
    phrase(rf"{_RU_OVERRIDE_VERB}{SEP}{words_upto(2)}{_RU_QUALIFIER}{SEP}{words_upto(2)}{_RU_NOUN}", _RU_NOUNS),
    phrase(rf"{_RU_OVERRIDE_VERB}{SEP}{_RU_NOUN}{SEP}{words_upto(1)}(?:выше|ранее|до этого|системы)", _RU_NOUNS),
    # Chinese, simplified and traditional: ignore / disregard / forget … previous / all … instructions
    phrase(
        r"(?:忽略|忽视|忽視|无视|無視|不要理会|不要理會|别管|別管|忘记|忘記|忘掉|不要遵循|不要遵守|不再遵守|覆盖|覆蓋|抛开|拋開)"
        r"[^\n。！？]{0,6}?(?:之前|以前|先前|前面|上面|以上|上述|此前|原来|原來|原有|所有|全部|一切|你的|系统|系統)"
        r"[^\n。！？]{0,6}?(?:指令|指示|说明|說明|提示词|提示詞|提示|规则|規則|设定|設定|命令|要求|约束|約束)",
        ("指令", "指示", "说明", "說明", "提示", "规则", "規則", "设定", "設定", "命令", "要求", "约束", "約束"),
    ),
    # Japanese: (previous / above / all) instructions … ignore / forget
    phrase(
        r"(?:以前|これまで|前|上記|先|最初|すべて|全て|今まで|元)の(?:すべての|全ての)?"
        r"(?:指示|命令|指令|ルール|プロンプト|設定|制約)(?:は|を)?(?:すべて|全て)?(?:無視|忘れ)",
        ("無視", "忘れ"),
    ),
    # Korean: previous instructions … ignore / forget
    phrase(
        r"(?:이전|앞|위|기존|모든)[의 ]{0,2}(?:모든 )?(?:지시|지침|명령|규칙|프롬프트)(?:사항)?(?:을|를|은|는)? ?"
        r"(?:모두 )?(?:무시|잊어)",
        ("무시", "잊어"),
    ),
]
_CJK_USER_KEYS = ("пользовател", "юзер", "用户", "用戶", "使用者", "ユーザー", "사용자")
_CJK_SECRECY = [
    phrase(
        r"не (?:говори|говорите|сообщай|сообщайте|рассказывай|рассказывайте|показывай|упоминай)"
        r"(?: об этом| это| ничего)? (?:пользовател\w{0,8}|юзер\w{0,8})",
        _CJK_USER_KEYS,
    ),
    phrase(r"(?:без ведома|втайне от|скрой от|скройте от) (?:пользовател\w{0,8})", _CJK_USER_KEYS),
    phrase(
        r"(?:不要|不可|别|別|切勿|不得)(?:告诉|告訴|告知|通知|提醒|透露给|透露給|让|讓)(?:用户|用戶|使用者)",
        _CJK_USER_KEYS,
    ),
    phrase(r"(?:对|對)(?:用户|用戶|使用者)保密|(?:瞒着|瞞著)(?:用户|用戶|使用者)", _CJK_USER_KEYS),
    phrase(r"ユーザー(?:に|には)(?:言わ|伝え|知らせ|教え|報告し|見せ)ないで|ユーザーに(?:は)?内緒", _CJK_USER_KEYS),
    phrase(r"사용자에게 (?:알리지|말하지|보고하지|보여주지) ?(?:마|말)", _CJK_USER_KEYS),
]
_CJK_PERSONA = [
    phrase(r"(?:теперь ты|отныне ты|с этого момента ты)\b|режим (?:разработчика|без ограничений)", ("ты", "режим")),
    phrase(
        r"你现在是|现在你是|你現在是|現在你是|从现在(?:开始|起)[，, ]?你|從現在(?:開始|起)[，, ]?你|"
        r"(?:开发者|開發者|越狱|越獄)模式",
        ("你", "模式"),
    ),
    phrase(
        r"(?:今から|これから)(?:は)?(?:あなた|君|お前)は|あなたは(?:今から|これから)|開発者モード|脱獄モード",
        ("今から", "これから", "モード"),
    ),
    phrase(r"(?:이제부터|지금부터) (?:너는|당신은)|개발자 모드", ("이제부터", "지금부터", "모드")),
]


def _flagged(scan: Text, phrases: list[Phrase], rule: str, *, check: bool) -> Iterator[Hit]:
    text = scan.text
    for each in phrases:
        for match in each.finditer(scan, rule):
            if not check or (not negated(text, match.start()) and not quoted_mention(text, *match.span())):
                yield scan.hit(rule, *match.span())


def hits(scan: Text) -> Iterator[Hit]:
    yield from _flagged(scan, _LATIN_OVERRIDE, "override_instructions", check=True)
    yield from _flagged(scan, _LATIN_SECRECY, "secrecy_from_user", check=False)
    yield from _flagged(scan, _LATIN_PERSONA, "persona_switch", check=False)
    if scan.text.isascii():  # the Cyrillic and CJK phrases need their own letters
        return
    yield from _flagged(scan, _CJK, "override_instructions", check=True)
    yield from _flagged(scan, _CJK_SECRECY, "secrecy_from_user", check=False)
    yield from _flagged(scan, _CJK_PERSONA, "persona_switch", check=False)
