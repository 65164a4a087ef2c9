package intent

import (
	"cmp"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The rules: whether a user's message asks to read, to change or
// hypothetically, and for a change what to set to which value. They are
// deliberately conservative: a change is an imperative change verb ("set",
// "setze", "mets", typos of the English ones tolerated) at the start of a
// clause, after a polite opener ("can you", "kannst du", "peux-tu"), or a
// German infinitive at a clause's end ("Q1 auf 105 A setzen"), with a value
// ("to 105 A", "auf 105 A", "à 105 A"), an amount ("by 5 A", "um 5 A") or an
// on/off. Reported words (quotes, "the logbook says:", "shift note:", a note
// to the assistant) are blanked before the rules read the message; nouns
// ("drop in", "ramp of", "step response"), history ("since the trip", "over
// the last 2 hours"), questions, hypotheticals ("what would happen if…")
// and negations ("don't change anything") are never changes. The section
// "Intent before action" of docs/safety.md lists the rules and their tests.

// Finding is what the rules found in the user's words.
type Finding struct {
	Intent Intent
	// Reason names the rule that decided, for events, logs and tests.
	Reason string
}

// Reasons the rules give.
const (
	ReasonNegated       = "negated: the message says not to change anything"
	ReasonHypothetical  = "hypothetical: the message asks what would happen or whether to change"
	ReasonQuestion      = "question: the message asks about something"
	ReasonChange        = "change: an imperative change with a value, an amount or an on/off"
	ReasonContinuation  = "change: continues the previous message's change"
	ReasonAnswer        = "change: answers the assistant's question about the previous message's change"
	ReasonReported      = "reported: the change words are quoted or reported (a logbook, a note, a message to the assistant)"
	ReasonHistory       = "history: change words used as a noun or about the past (\"drop in\", \"ramp of\", \"since the trip\")"
	ReasonUnclear       = "unclear: a change verb without a value the rules can use"
	ReasonRestore       = "restore: a change back to an earlier value, which the message does not state"
	ReasonRestoreAt     = "change: back to the value at a time the message names, read from the target's history"
	ReasonNoChange      = "read: no imperative change with a value"
	ReasonTooLong       = "read: the message is longer than a change request (MaxChangeMessage)"
	ReasonLater         = "later: a change on a condition or for a later time, not now"
	ReasonCorrected     = "corrected: the message corrects or takes back its change after stating it (\"no wait, 104 A\", \"I mean…\", \"actually no\")"
	ReasonOpenValue     = "open: the message gives a setting no single value (\"105 or 140 A\", \"100 bis 105 A\", \"0x69\")"
	ReasonByOtherDevice = "target: the change's target is named by way of another device (\"all but Q2\", \"Q1 instead of Q2\", \"the corrector near Q2\")"
	ReasonHidden        = "hidden: invisible characters (zero-width, text direction) in the words, so what the message shows may not be what it says"
)

// token is one word of a message, lower-cased, with its place in the
// original text (targets are reported as the user wrote them).
type token struct {
	w          string
	start, end int
}

// clause is a run of tokens between punctuation.
type clause struct {
	toks     []token
	question bool // ended by "?"
}

func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '\'' || r == '’' || r == '_'
}

func isSign(r rune) bool { return r == '-' || r == '+' || r == '−' }

// scan splits a message into clauses of tokens. ':', '.', ',', '-', '/'
// inside a word stay in it ("SR:RF:CAV2:VOLT", "105.5", "105,5",
// "read-only", "peux-tu"); a sign or point before a digit starts a number;
// "=", "→" and "->" are tokens.
func scan(msg string) []clause {
	var (
		out []clause
		cur clause
	)
	flush := func(q bool) {
		if len(cur.toks) > 0 {
			cur.question = q
			out = append(out, cur)
		}
		cur = clause{}
	}
	runeAt := func(i int) rune {
		if i < 0 || i >= len(msg) {
			return 0
		}
		r, _ := utf8.DecodeRuneInString(msg[i:])
		return r
	}
	for i := 0; i < len(msg); {
		r, size := utf8.DecodeRuneInString(msg[i:])
		next := runeAt(i + size)
		switch {
		case isWordRune(r) || (isSign(r) || r == '.') && unicode.IsDigit(next):
			j := i + size
			for j < len(msg) {
				r2, s2 := utf8.DecodeRuneInString(msg[j:])
				n2 := runeAt(j + s2)
				prevDigit := j > 0 && msg[j-1] >= '0' && msg[j-1] <= '9'
				if isWordRune(r2) || strings.ContainsRune(":.-/", r2) && (unicode.IsLetter(n2) || unicode.IsDigit(n2)) ||
					r2 == ',' && prevDigit && unicode.IsDigit(n2) {
					j += s2
					continue
				}
				break
			}
			w := strings.ReplaceAll(strings.ToLower(msg[i:j]), "’", "'")
			w = strings.ReplaceAll(w, "−", "-")
			cur.toks = append(cur.toks, token{w: w, start: i, end: j})
			i = j
			continue
		case r == '-' && next == '>':
			cur.toks = append(cur.toks, token{w: "->", start: i, end: i + 2})
			i += 2
			continue
		case r == '=' || r == '→':
			cur.toks = append(cur.toks, token{w: "=", start: i, end: i + size})
		case r == '?' || r == '‽' || r == '⁈' || r == '⁉':
			flush(true)
		case r == '!' && strings.HasPrefix(strings.TrimLeft(msg[i:], "!"), "?"):
			flush(true) // "… 105 A!?": a question, as "?!" is
		case strings.ContainsRune(".!;,\n:—–()«»\"“”„", r):
			flush(false)
		}
		i += size
	}
	flush(false)
	return out
}

// Word lists of the rules (lower case; "'" for any apostrophe), in the
// three languages capgraph reads: English, German, French.
var (
	// valueVerbs change a setting to a value: a change only with a value
	// marker and a number ("to 105 A", "auf 105 A", "à 105 A"), an amount
	// ("by 5 A") or, for particleVerbs, an on/off.
	valueVerbs = wordSet(`set restore revert change adjust raise lower increase decrease reduce bump ramp write modify alter tweak trim
		put bring move drop boost step crank dial turn switch power reset return drive tune apply correct fix
		nudge push send update program configure make mach mache machen dreh drehe drehen
		setze setz setzen setzt stelle stell stellen stellt ändere änder ändern ändert aendere aendern erhöhe erhöh erhöhen
		erhoehe erhoehen verringere verringern senke senk senken reduziere reduzier reduzieren fahre fahr fahren schreibe
		schreib schreiben einstellen hochfahren runterfahren herunterfahren absenken anheben verstelle verstellen schalte
		schalt schalten
		mets mettez mettre règle réglez régler regle reglez regler change changez changer modifie modifiez modifier
		augmente augmentez augmenter diminue diminuez diminuer baisse baissez baisser monte montez monter passe passez
		passer fixe fixez fixer ajuste ajustez ajuster réduis réduisez réduire reduis reduisez reduire descends descendez
		descendre écris écrivez écrire ecris ecrivez ecrire amène amenez amener mettes règles regles augmentes diminues
		remets remettez remettre ramène ramenez ramener`)
	// weakVerbs are valueVerbs that are as often about a message, a plot
	// or a logbook: a change verb only when a value follows ("update Q1 to
	// 105 A"); without one a read ("send me the Q1 plot"), never a change
	// request that lacks its value.
	weakVerbs = wordSet(`push send update program configure make mach mache machen take knock`)
	// amountVerbs change a setting by an amount they name before its target,
	// with the sign they carry: "add 5 A to Q1" (+5), "subtract 2 A from Q1",
	// "take 5 A off Q1" (-5), "ajoute 5 A à Q1", "zieh 5 A von Q1 ab"
	// (amountFirst). Without an amount they are reads ("add Q2 to the plot").
	amountVerbs = map[string]float64{"add": 1, "subtract": -1, "take": -1, "remove": -1, "knock": -1,
		"addiere": 1, "addier": 1, "subtrahiere": -1, "subtrahier": -1, "zieh": -1, "ziehe": -1, "nimm": -1,
		"ajoute": 1, "ajoutez": 1, "rajoute": 1, "rajoutez": 1, "enlève": -1, "enlevez": -1, "retire": -1, "retirez": -1,
		"ôte": -1, "ôtez": -1, "soustrais": -1, "soustrayez": -1}
	// amountLinks are the words between an amount and its target, by the
	// amount's sign ("to Q1", "off of Q1", "à Q1", "von Q1").
	amountLinks = map[float64]map[string]bool{
		1:  wordSet(`to onto zu auf à au aux sur`),
		-1: wordSet(`from off von à au aux de du des sur`),
	}
	// amountParticles end a German amount verb's clause ("zieh 5 A von Q1
	// ab", "nimm 5 A von Q1 weg"); without it the verb asks nothing.
	amountParticles = map[string]string{"zieh": "ab", "ziehe": "ab", "nimm": "weg"}
	// atOnce end a request that is to be carried out now ("… asap", "…
	// right away", "… at once").
	atOnce = wordSet(`asap immediately instantly straightaway away once sofort umgehend immédiatement immediatement suite tout`)
	// zeroVerbs set their target to 0 ("zero Q1", "zero the corrector
	// currents").
	zeroVerbs = wordSet(`zero`)
	// madeVerbs take their value without a marker (madeValue).
	madeVerbs = wordSet(`make mach mache`)
	// particleVerbs are changes with an on/off alone ("turn off", "schalte
	// … aus", "coupe").
	particleVerbs = wordSet(`turn switch power shut flip schalte schalt schalten dreh drehe drehen mach mache`)
	// powerParticles are the states "power" and "shut" ask for with "up"
	// and "down" ("turn down" lowers, "power down" switches off).
	powerParticles = map[string]string{"up": "on", "down": "off"}
	// particleStates are the states the particles of particleVerbs ask for.
	particleStates = map[string]string{"on": "on", "ein": "on", "an": "on", "off": "off", "aus": "off", "ab": "off"}
	// offVerbs are the toggleVerbs that switch off (the others switch on).
	offVerbs = wordSet(`disable ausschalten abschalten deaktiviere deaktivieren éteins éteignez éteindre eteins eteignez eteindre
		coupe coupez couper désactive désactivez désactiver deactivate`)
	// toggleVerbs are changes on their own.
	toggleVerbs = wordSet(`enable disable einschalten ausschalten abschalten anschalten aktiviere aktivieren deaktiviere
		deaktivieren éteins éteignez éteindre eteins eteignez eteindre allume allumez allumer coupe coupez couper
		active activez activer désactive désactivez désactiver activate deactivate`)
	// upVerbs and downVerbs give an amount its sign ("raise Q1 by 5 A" is +5).
	upVerbs = wordSet(`raise increase bump boost crank erhöhe erhöh erhöhen erhoehe erhoehen anheben hochfahren augmente
		augmentez augmenter monte montez monter`)
	downVerbs = wordSet(`lower decrease reduce drop trim verringere verringern senke senk senken reduziere reduzier
		reduzieren absenken runterfahren herunterfahren diminue diminuez diminuer baisse baissez baisser réduis réduisez
		réduire reduis reduisez reduire descends descendez descendre`)
	// upWords and downWords are particles giving a neutral verb its sign
	// ("ramp Q1 up by 5 A", "fahre Q1 um 5 A hoch").
	upWords   = wordSet(`up hoch rauf herauf`)
	downWords = wordSet(`down runter herunter`)
	// germanInfinitives end a German request ("Q1 auf 105 A setzen").
	germanInfinitives = wordSet(`setzen stellen einstellen ändern aendern verändern erhöhen erhoehen senken absenken
		reduzieren verringern fahren hochfahren runterfahren herunterfahren schalten ausschalten einschalten abschalten
		anschalten schreiben anheben verstellen drehen`)
	// germanSubjects before a German infinitive make a statement ("er
	// wollte Q1 auf 105 A setzen"), not a request.
	germanSubjects = wordSet(`ich er es man wir ihr sie jemand niemand der die das`)
	// typoTolerant are English verbs long enough that one typo cannot make
	// another common word of them.
	typoTolerant = wordSet(`change adjust raise increase decrease reduce modify tweak boost write enable disable switch`)
	// typoTolerantInOrder are they, sorted: a word one typo from two of
	// them is always read as the same one.
	typoTolerantInOrder = slices.Sorted(maps.Keys(typoTolerant))
	// knownTypos of short verbs, where distance 1 would reach real words
	// ("get", "let", "sit").
	knownTypos = map[string]string{"sett": "set", "sset": "set", "swt": "set", "sst": "set", "rmap": "ramp", "rapm": "ramp",
		"trun": "turn", "tunr": "turn", "tirn": "turn", "lowr": "lower", "lwoer": "lower", "loewr": "lower", "mvoe": "move",
		"dorp": "drop", "bmup": "bump", "chnage": "change", "cahnge": "change", "chagne": "change", "chane": "change"}
	// notVerbs are words one typo away from a verb that are words of their own.
	notVerbs = wordSet(`chance charge changes changed raised raises arise lowered lowers increased increases decreased
		decreases reduced reduces modified modifies tweaks tweaked boosts boosted writes wrote written unable enables
		enabled disables disabled switches switched adjusts adjusted after`)
	// readVerbs start an imperative that reads (a later change verb after
	// "and" still counts: "read Q1 and set it to 105 A").
	readVerbs = wordSet(`read show tell check get give plot display list find look fetch report compare verify confirm
		monitor watch print describe explain summarize summarise graph chart retrieve query
		lies lese lesen zeige zeig zeigen gib prüfe prüfen überprüfe plotte
		lis lire affiche affichez afficher montre montrez montrer donne donnez donner vérifie vérifiez vérifier trace tracez`)
	// fillers may come before an imperative verb.
	fillers = wordSet(`ok okay so hey hi hello yo well alright right now then also and but please pls plz kindly just quickly
		again yes yeah sure oh um uh actually first go ahead agent capgraph
		bitte jetzt dann und auch nun mal doch also ja gut
		alors et puis maintenant oui bon bien stp svp ensuite aussi`)
	// questionWords start a question.
	questionWords = wordSet(`what whats what's wat wht waht whta which who whose whom when where why how hows how's is isn't
		isnt are aren't arent was wasn't wasnt were weren't do does doesn't doesnt did didn't didnt has hasn't have haven't
		had will won't would could can can't cant should shall may might must am
		wie was welche welcher welches welchen welchem wer wen wem wann wo woher wohin warum wieso weshalb ist sind war
		waren hat haben hatte hatten wird werden wurde wurden gibt gab kann darf soll sollte muss stimmt
		quel quelle quels quelles qu'est-ce quoi combien comment où quand pourquoi qui est-ce est-il est-elle a-t-il
		y'a-t-il`)
	// negations before a change word make the message read-only.
	negationWords = wordSet(`don't dont not never no without nothing none avoid stop cannot can't cant won't shouldn't mustn't
		nicht nich kein keine keinen keinesfalls nichts ohne nie niemals
		ne n' sans aucun aucune rien jamais pas`)
	// danglingNegations ending a clause negate the change in the clauses
	// after it ("Do not, under any circumstances, set…", "Never, ever,
	// set…"); a bare "No," answers something else ("No, set Q1 to…").
	danglingNegations = wordSet(`not never don't dont nicht nich niemals nie keinesfalls jamais pas`)
	// afterNegations are the words after a change word that negate it
	// ("change nothing", "set Q1 not to…", "setze Q1 keinesfalls auf…",
	// "ändere nichts", "ne change rien").
	afterNegations = wordSet(`nothing not never nichts nicht nich nie niemals keinesfalls keineswegs rien pas jamais`)
	// changeWords are the forms of changing a negation may refer to.
	changeWords = wordSet(`change changes changing changed set setting write writing written wrote modify modifying
		modified touch touching touched adjust adjusting adjusted alter altering altered move moving moved
		tweak tweaking tweaked raise raising lower lowering increase increasing decrease decreasing ramp ramping
		writes sets nudge nudging nudged push pushing pushed send sending sent update updating updated program programming
		programmed configure configuring configured
		ändern ändere änder ändert aendern verändern verändere setzen setze setz stellen stelle verstellen anfassen
		änderung änderungen
		fasse anrühren schreiben schreibe einstellen
		changer change changez modifier modifie modifiez toucher touche touchez régler règle réglez mettre mets mettez
		écrire écris ajuster ajuste`)
	// presentation nouns: "set the range to 2 hours" changes the answer, not the machine.
	presentationNouns = wordSet(`range plot chart graph axis view page display format zoom window timespan timeframe
		interval period resolution precision decimals language zeitraum achse bereich ansicht sprache plage axe
		période vue langue
		model lattice file config configuration database spreadsheet snapshot saveset report document paper notebook offline
		modell datei konfiguration datenbank bericht dokument papier modèle fichier rapport papier
		diagramm grafik kurve graphique courbe tracé tableau
		reminder reminders timer timers bookmark bookmarks notification notifications erinnerung rappel`)
	// nounFollowers after a change word make it a noun ("drop in", "ramp
	// of", "step response", "change history", "set of").
	nounFollowers = wordSet(`in of history histories response responses rate rates size sizes log logs record records event
		events time times count test tests sequence sequences request requests limit limits point points curve curves
		profile profiles speed duration amplitude list function behaviour behavior pattern patterns
		des du der von`)
	// toMarkers come before the value to set; byMarkers before an amount.
	toMarkers = wordSet(`to at = -> auf à a sur`)
	byMarkers = wordSet(`by um de`)
	// fromMarkers come before the value now ("from 92 A to 105 A").
	fromMarkers = wordSet(`from von de`)
)

func wordSet(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

// hypotheticalPattern: "what would happen", "what if", "should I",
// "is it safe to", "if I set…", "how do I…" and their German and French
// forms — a change considered, not asked.
var hypotheticalPattern = mustFilter(`\b(?:what (?:would|will|might|could)\b|what happens|what if|` +
	`would (?:it|that|this|the|there|we|i)\b|will (?:it|that|this) (?:trip|break|affect|cause|damage|hurt|change|be)|` +
	`hypothetic\w*|suppose|supposing|imagine|in theory|theoretically|in (?:the |a )?simulation\b|simulate\b|` +
	`(?:in|on|with|using) (?:the |a )?(?:simulator|sim|digital twin|virtual machine|model of the machine)\b|` +
	`(?:im|in der|auf dem|mit dem) (?:simulator|simulation)\b|(?:dans|sur|avec) (?:le |la )?(?:simulateur|simulation)\b|` +
	`if (?:i|we|you|someone|somebody|one|they) (?:were to|was to|did|\w+ed|set|change|raise|lower|increase|decrease|ramp|adjust|write|turn|switch|add|subtract|take|remove)\b|` +
	`\b(?:were|was|is|got) (?:set|changed|raised|lowered|increased|decreased|ramped|adjusted) to\b.*\b(?:would|will|what)\b|` +
	`(?:should|shall|can|could|may|might|must) (?:i|we)\b|do (?:i|we) (?:need|have) to|` +
	`is it (?:safe|ok|okay|alright|possible|allowed|wise|fine|a good idea|better|necessary) to|` +
	`would it be|how (?:would|do|can|could|should|to) (?:i|we|you|one)?\b)` +
	// German.
	`|\b(?:was wäre|was waere|was passiert|was passierte|was würde|was wuerde|was geschieht|würde|wuerde|wäre|waere|hätte|haette|` +
	`wenn (?:ich|wir|man|du|jemand)|falls|angenommen|hypothetisch|theoretisch|` +
	`(?:soll|sollte|sollten|sollen|kann|könnte|koennte|darf|muss|müssen) (?:ich|wir|man)\b|` +
	`ist es (?:sicher|ok|okay|möglich|moeglich|erlaubt|sinnvoll|besser|nötig|noetig)|wie (?:kann|könnte|koennte|soll|setze|stelle|ändere) (?:ich|wir|man)?)\b` +
	// French.
	`|(?:\bque se passe|\bque se passerait|\bqu'arriverait|\bqu'est-ce qui se passe|\bet si\b|\bsi (?:je|j'|on|nous|l'on|quelqu'un|tu|vous)|` +
	`\bsupposons|\bimaginons|\bhypothétique\w*|\bthéoriquement|\bdois-je|\bdevrais-je|\bdevrions-nous|\bfaut-il|\bpuis-je|\bpeut-on|` +
	`\best-il (?:sûr|sur|possible|prudent|raisonnable)|\best-ce (?:sûr|possible|prudent)|\bserait|\bpourrait-on|` +
	`\bcomment (?:je|on|puis-je|peut-on|faire)|\ben théorie|\ben principe|\by a-t-il (?:un moyen|une façon)|\best-ce qu'on peut)` +
	`|\b(?:gibt es (?:eine möglichkeit|einen weg)|is there (?:a|any) way)\b`)

// adviceAfterChange: a question asking for a judgement of the change said
// before it ("Set Q1 to 105 A. Is that safe?", "Ist das in Ordnung?",
// "C'est bon ?"): the user asks for advice, not yet for the change.
var adviceAfterChange = mustFilter(`\b(?:(?:is|are|would|will) (?:that|this|it) (?:be )?(?:safe|ok|okay|fine|alright|all right|right|correct|wise|allowed|a good idea)|` +
	`what do you think|does (?:that|this) make sense|good idea\?|makes sense\?|(?:any )?(?:thoughts|opinions|objections|comments|feedback)\?|` +
	`yes or no\?|or not\?|(?:is|are|would|will) (?:that|this|it) (?:be )?(?:within|inside|in|below|under|above|over|out of|outside) (?:the )?(?:limits?|range|spec|specs|tolerance)|` +
	`ja oder nein ?\?|(?:ist|wäre) (?:das|dies) (?:innerhalb|außerhalb|ausserhalb|in) (?:der |den )?(?:grenzen|limits|spezifikation|toleranz)|` +
	`est-ce (?:dans|hors|en dehors) (?:des |les )?(?:limites|tolérances|spécifications)|` +
	`(?:ok|okay|alright|all right|right|correct|fine|good|agreed|yes|ja|gut|richtig|einverstanden|in ordnung|passt das|oder|gell|nicht wahr|` +
	`oui|bon|d'accord|non|n'est-ce pas) ?\?|` +
	`ist (?:das|dies) (?:sicher|ok|okay|in ordnung|richtig|sinnvoll|erlaubt)|was meinst du|was denkst du|` +
	`c'est (?:sûr|sur|bon|correct|ok|prudent) ?\?|qu'en penses-tu|qu'en pensez-vous)`)

// withdrawnLabel: a line labelled as withdrawn ("Cancel: set Q1 to
// 105 A", "Storniert: …", "Annulé : …").
var withdrawnLabel = regexp.MustCompile(`(?m)^[\s>*_#-]*(?:cancel|cancell?ed|abort|aborted|void|voided|withdrawn|obsolete|scrapped|ignore|disregard|` +
	`test|testing|test only|roleplay|role-play|role play|pretend|fake|dummy|mock|hypothetically|simulation|simulate|dry[- ]?run|forbidden|for fun|just for fun|` +
	`storniert|stornieren|abgebrochen|abbrechen|hinfällig|ignorieren|verworfen|simuliere|simulation|trockenlauf|verboten|es ist verboten|(?:nur )?zum spaß|` +
	`annul|annule|annulé|annulée|annuler|ignorer|obsolète|simule|simuler|interdit|il est interdit|pour rire)[\s*_]*:`)

// codeRequest: a request for code or a script that would change
// something ("Write a script that sets Q1 to 105 A", "Schreib ein Skript,
// das…", "Écris un script qui…") asks for text, not for the change.
var codeRequest = mustFilter(`(?:\b(?:write|generate|create|draft|give me|show me|produce|compose|schreib|schreibe|erstelle|erzeuge|rédige|donne-moi)|` +
	`(?:^|[^\pL])(?:écris|écrivez|génère|générez))\b[^.!?\n]{0,40}\b(?:script|scripts|code|program|programme|macro|function|snippet|routine|` +
	`skript|programm|makro|funktion|fonction)\b`)

// soonest: "as soon as possible" is now, not on a condition.
var soonest = strings.NewReplacer("as soon as possible", "now", "dès que possible", "now", "so bald wie möglich", "now", "sobald wie möglich", "now")

// readOnlyPattern: explicit statements that nothing is to change.
var readOnlyPattern = mustFilter(`\b(?:read[- ]?only|dry[- ]?run|just (?:looking|checking|curious|asking)|` +
	`under no circumstances|on no account|by no means|auf (?:gar )?keinen fall|unter keinen umständen|en aucun cas|sous aucun prétexte|` +
	`just kidding|kidding|joking|jk|never ?mind|(?:war )?nur (?:ein )?spass|scherz|je plaisante|as a joke|for fun|for a laugh|zum spass|c'est une blague|pour rire|just (?:a )?test(?:ing)?|(?:this is )?(?:only|just) a test|this is a test|test only|` +
	`for testing|nur (?:ein |zum )?test|juste (?:un |pour )?test|c'est un test|pour (?:tester|essayer)|scratch that|forget (?:it|that)|cancel that|vergiss es|vergiss das|laisse tomber|` +
	`leave (?:it|everything|things|them|that|the \w+) (?:as|alone|where)|hands off|` +
	`nur (?:lesen|anzeigen|schauen|ablesen)|schreibgeschützt|lecture seule|juste (?:regarder|lire|vérifier)|` +
	`(?:do not|don't|dont|never) (?:actually |really |yet )?do (?:it|this|that|anything)|` +
	`no action (?:needed|required|necessary|wanted)|for (?:review|information|reference|discussion) only|` +
	`nicht (?:ausführen|anwenden|durchführen|umsetzen|abschicken)|ohne (?:es |das |ihn )?(?:auszuführen|anzuwenden|durchzuführen)|` +
	`(?:führ|führe) (?:es|das|ihn) (?:noch )?nicht aus|nur zur (?:info|information|ansicht|kenntnis)|` +
	`ne pas (?:exécuter|appliquer|lancer|envoyer)|ne (?:l')?(?:exécute|exécutez|applique|appliquez|lance|lancez) pas|` +
	`sans (?:l')?(?:exécuter|appliquer)|pour information|pour info)\b`)

// takenBack is the words that take a message's change back or say it is
// not to be run (readOnlyPattern, notToRun, onlyFun, withdrawnLabel); ""
// when there are none.
func takenBack(norm string) string {
	if strings.Contains(norm, "rest") || strings.Contains(norm, "other") || strings.Contains(norm, "hands off ") {
		norm = keptApart.ReplaceAllString(norm, " ") // "…, leave the rest as is", "…, hands off Q2": the change stands
	}
	for _, p := range []filtered{readOnlyPattern, notToRun, onlyFun} {
		if m := p.FindStringSubmatch(norm); m != nil {
			return strings.Trim(m[0], " .,;:!?)]—–-")
		}
	}
	if strings.Contains(norm, ":") {
		if m := withdrawnLabel.FindString(norm); m != "" {
			return strings.Trim(m, " \n.,;:!?)]—–->*_#")
		}
	}
	return ""
}

// keptApart: words beside a change that keep other things as they are,
// not the change.
var keptApart = regexp.MustCompile(`\bleave (?:the (?:rest|others?(?: \pL+)?)|all (?:the )?others?) (?:as|alone|where)|\bhands off (?:the |of )?[\pL\d]`)

// whyNot: a question why a change is not made, which may suggest it.
var whyNot = mustFilter(`\b(why (?:don't|dont|do not|not|won't|wouldn't|can't|didn't) (?:you|we|i)?|warum (?:[^.?!]{0,40} )?nicht|pourquoi (?:ne |n')?(?:pas|as-tu pas|ne pas))`)

// mayAsked: a question whether a change can or may be made, which
// operators also use to ask for one.
var mayAsked = mustFilter(`\b((?:can|could|may|might|shall|should) (?:i|we)|would it be (?:possible|ok|okay|alright|fine)|` +
	`is it (?:possible|ok|okay|alright|fine|allowed|safe)|(?:kann|könnte|koennte|darf|soll|sollte) (?:ich|wir|man)|ist es (?:möglich|moeglich|ok|okay|erlaubt|sicher)|` +
	`hätte (?:gern|gerne)|haette (?:gern|gerne)|wäre es möglich|waere es moeglich)\b|(?:^|[^\pL])((?:peut|pourrait|pourrions|puis|pouvons|pourrais)-(?:on|je|nous)|` +
	`est-ce (?:qu'on peut|possible)|(?:serait|est)-il possible|ce serait possible)`)

// onlyFun: "war nur Spaß" (just kidding), apart from readOnlyPattern as
// "ß" is no word character to its \b.
var onlyFun = mustFilter(`(?:war |ist |nur )+(?:ein )?spaß(?:[^\pL]|$)`)

// notSerious: laughter or a wink beside the words ("Set Q1 to 105 A lol",
// "… ;)", "… 😉", "haha", "mdr"): whether the change is meant would be a
// guess. A smile (":)", "👍") is no such sign.
var notSerious = mustFilter(`(;-?[)d]|:-?p|😉|😜|😝|😂|🤣|😏|🤪|🙃|\b(?:lol|lolz|lmao|rofl|xd|mdr|haha+|hehe+)\b)(?:[^\pL\pN]|$)`)

// notToRun: the message says its change is not to be carried out ("…
// (don't execute)", "DO NOT APPLY: …", "…, without running it"). Its own
// pattern, as it ends at punctuation, where readOnlyPattern's words end at
// a word's end.
var notToRun = mustFilter(`\b(?:do not|don't|dont|never|without|not to|must not|mustn't|should not|shouldn't) (?:actually |really |yet |just )?` +
	`(?:execute|executing|run|running|apply|applying|perform|performing|carry out|carrying out|send|sending|commit|committing|implement|implementing|act|acting)` +
	`(?: (?:it|this|that|them|the (?:change|changes|command|commands|write|writes)|anything|any of (?:it|this|that)|yet|now|for real|just yet))*` +
	`(?:\s*[.,;:!?)\]—–-]|\s*$)`)

// correctionPattern: words that correct or take back a change said
// before them ("set Q1 to 105 A — no wait, 104 A", "…, I mean 104 A", "…;
// actually no", "nein warte", "ich meine", "je veux dire", "ou plutôt").
// Which change is meant would then be a guess. A bare "no" or "sorry"
// corrects only after a break and before a number ("…, no, 104 A": "cavity
// no 2" is a name), "wait" only with a break after it too ("…, wait, 104":
// "…, wait 2 s, then…" is a sequence).
var correctionPattern = mustFilter(`\b(?:no,? wait|wait,? no|actually,? no|i mean|i meant|make (?:that|it) [-+−]?\d+|or rather|oops|` +
	`on second thought|belay that|typo|correction|(?:don't|do not) actually|actually,? (?:don't|do not)|(?:no|nah|nope)[,!]? (?:leave|keep) it|(?:no|nah|nope)[,!.]* *(?:don't|dont|do not)|don't do (?:it|that)|` +
	`(?:lieber|besser) nicht|nein[,!.]* *(?:nicht|lass)|plutôt pas|non[,!.]* *(?:ne (?:le|la) fais pas|pas ça)|` +
	`nein,? warte|warte,? nein|ich meine|ich meinte|oder (?:besser|vielmehr|lieber)|doch nicht|ach nee|ach nein|tippfehler|korrektur|` +
	`non,? attends|attends,? non|je veux dire|je voulais dire|ou plutôt|en fait,? non|finalement,? non|enfin,? non|faute de frappe)\b|` +
	`\s[-–—]+\s*(?:not|no|nope|nein|nicht|non|pas)[.!]*\s*$|` +
	`[,;.!—–…-] *(?:no|nein|non|sorry|pardon)[,.!]* +[-+−]?\d|[,;.!—–…-] *(?:wait|warte|attends)[,.!]+ *[-+−]?\d`)

// valueSaid: a value given to something ("to 105 A", "auf 105", "= 105").
var valueSaid = regexp.MustCompile(`(?:^|[\s=])(?:to|at|by|auf|um|à|de|=)\s*[-+−]?\d`)

// withdrawals are clauses that, on their own after a change, take it
// back or doubt it ("Set Q1 to 105 A. No.", "…. Wrong one.", "…. Stop.",
// "…, I guess?", "…, or maybe not", "…. Nein.", "…. Attends."), compared
// without the hesitations before them (hesitations). A clause starting
// with "wrong" ("Sorry, wrong magnet") is one too. A hesitation alone
// between the change and more words ("…, er, Q2") corrects it.
var (
	withdrawals = wordPhrases(`no|nope|nah|not|no no|nein|nee|nö|non|wrong|test|testing|just testing|a test|that's wrong|that is wrong|not that|not that one|` +
		`undo|abort|stop|cancel|cancel it|wait|hold on|hang on|hold it|disregard|disregard that|disregard this|ignore that|ignore this|` +
		`ignore it|ignore the above|negative|my bad|my mistake|mistake|by mistake|sent by mistake|jk|lol jk|` +
		`or not|maybe not|or maybe not|perhaps not|or perhaps not|better not|i guess|i suppose|i think|i believe|maybe|perhaps|probably|` +
		`not sure|i'm not sure|im not sure|i don't know|dunno|` +
		`falsch|das ist falsch|stopp|halt|abbrechen|abbruch|warte|moment|moment mal|ignorieren|ignoriere das|lass es|lass das|fehler|` +
		`mein fehler|versehentlich|oder nicht|vielleicht|vielleicht nicht|wahrscheinlich|ich glaube|ich denke|glaube ich|denke ich|` +
		`schätze ich|oder so|weiß nicht|keine ahnung|il me semble|je suppose|` +
		`pas ça|faux|c'est faux|arrête|arrêtez|annule|annulez|annule ça|attends|attendez|oublie|oublie ça|oubliez|erreur|mon erreur|` +
		`par erreur|ou pas|ou non|peut-être|peut-être pas|probablement|je crois|je pense|je ne sais pas`)
	hesitations = wordSet(`hmm hm hmmm ugh uh um umm er erm ehm oh ah well sorry oops actually but ähm äh naja ach aber euh bof là mais`)
	wrongWords  = wordSet(`wrong falsch falscher falsche falsches mauvais mauvaise`)
	// hesitationSounds alone between a change and more words correct it.
	hesitationSounds = wordSet(`er erm uh um umm ehm äh ähm euh hm hmm`)
)

// wordPhrases is the set of "|"-separated phrases, each its words joined
// by one space.
func wordPhrases(s string) map[string]bool {
	m := map[string]bool{}
	for _, p := range strings.Split(s, "|") {
		m[strings.Join(strings.Fields(p), " ")] = true
	}
	return m
}

// negationSigns after a change take it back as "no" does ("Set Q1 to
// 105 A ❌").
const negationSigns = "❌🚫⛔👎🙅✖✗✘❎"

// withdrawn returns the clause after the first of cs (text's clauses from
// a change on, at from) that withdraws it (withdrawals), or a negation
// sign in text[from:], or "".
func withdrawn(text string, from int, cs []clause) string {
	if i := strings.IndexAny(text[from:], negationSigns); i >= 0 {
		r, _ := utf8.DecodeRuneInString(text[from+i:])
		return string(r)
	}
	for k := 1; k < len(cs); k++ {
		toks := cs[k].toks
		i := 0
		for i < len(toks) && hesitations[toks[i].w] {
			i++
		}
		if i == len(toks) {
			if k+1 < len(cs) && slices.ContainsFunc(toks, func(t token) bool { return hesitationSounds[t.w] }) {
				return span(text, toks) // "…, er, Q2"
			}
			continue
		}
		words := make([]string, 0, len(toks)-i)
		for _, t := range toks[i:] {
			words = append(words, t.w)
		}
		if withdrawals[strings.Join(words, " ")] || wrongWords[words[0]] {
			return span(text, toks[i:])
		}
	}
	return ""
}

// setApart: words before a name in a change's target that set the name
// apart from the target or place the target by it ("all quadrupoles
// except Q2", "Q1 instead of Q2", "the corrector near Q2", "alle außer
// Q2", "tous sauf Q2"). The target would then name a device it is not,
// and an action on that device would be permitted.
var setApart = wordSet(`except excepting excluding excl exception without w/o save apart minus but besides instead than unlike like
	not near beside behind upstream downstream next before after between außer ausser ausgenommen bis statt anstatt anstelle
	ohne wie neben hinter vor nach zwischen nicht exklusive sauf excepté hormis part sans comme lieu plutôt près derrière avant
	après entre pas
	same compared versus vs while with hands leave leaving keep keeping ignore ignoring skip skipping via using way powered fed sharing
	gleich verglichen lass lasse behalte mittels mit über même comparé laisse garde gardant avec pendant`)

// placeWords place a target by another device only when a preposition
// follows ("upstream of Q2"); before a noun they tell the device itself
// ("the upstream steerer 1").
var placeWords = wordSet(`upstream downstream`)

// placedBy reports whether rest, the words after a place word, begin with
// the preposition that makes it place by another device.
func placedBy(rest string) bool {
	ws := strings.Fields(strings.ToLower(rest))
	return len(ws) > 0 && (ws[0] == "of" || ws[0] == "from" || ws[0] == "von" || ws[0] == "de" || ws[0] == "du" || ws[0] == "des")
}

// byOtherDevice returns the words of a change's target from a setApart
// word on, when more words follow it, or "".
func byOtherDevice(cs []RequestedChange) string { return targetFrom(cs, setApart) }

// targetFrom returns the words of a change's target from a word of set on,
// when more words follow it, or "". It walks the target's words in place:
// the rules ask it of every change.
func targetFrom(cs []RequestedChange, set map[string]bool) string {
	for _, c := range cs {
		t := c.Target
		for i := 0; i < len(t); {
			r, size := utf8.DecodeRuneInString(t[i:])
			if !isWordRune(r) {
				i += size
				continue
			}
			j := i + size
			for j < len(t) {
				r2, s2 := utf8.DecodeRuneInString(t[j:])
				if !isWordRune(r2) && r2 != '/' && r2 != '-' {
					break
				}
				j += s2
			}
			if w := strings.ToLower(t[i:j]); set[w] && strings.IndexFunc(t[j:], isWordRune) >= 0 && (!placeWords[w] || placedBy(t[j:])) {
				return t[i:]
			}
			i = j
		}
	}
	return ""
}

// insisting: "I mean it", "ich meine es" insist on the change.
var insisting = map[string]string{"i mean": "it", "ich meine": "es"}

// corrects returns the words in text, a change and what follows it, that
// correct or take it back ("" when none do).
func corrects(text string) string {
	lower := strings.ReplaceAll(strings.ToLower(text), "’", "'")
	if !correctionPattern.mayMatch(lower) {
		return ""
	}
	for _, loc := range correctionPattern.re.FindAllStringIndex(lower, -1) {
		m := lower[loc[0]:loc[1]]
		if it, ok := insisting[m]; ok {
			if next := strings.Fields(lower[loc[1]:]); len(next) > 0 && strings.TrimRight(next[0], ".,!;") == it {
				continue
			}
		}
		if strings.HasPrefix(m, "make ") && !valueSaid.MatchString(lower[:loc[0]]) {
			continue // "Actually, make it 106 A": the message's own change, no value before it to correct
		}
		return strings.Trim(m, ",;.!—–…-+− 0123456789")
	}
	return ""
}

// copulas make words after a change a statement of what is ("(it's at
// 92 A now)", "Q2 is at 98 A", "il est à 92 A"), not more of the change;
// so do words of a state, a reason or a comparison ("Q2 should be at…",
// "because Q2 went to…", "Q2 sits at…", "like Q2 at…", "with Q2 at…",
// "Q2 liegt bei…", "comme Q2 à…") and an English past tense ("Q2
// dropped to 98 A").
var (
	copulas    = wordSet(`is are was were it's that's he's she's there's stays stay remains remain ist sind war waren bleibt bleiben est sont était c'est reste restent demeure`)
	stateWords = wordSet(`should must needs need sits sit reads shows went goes gone fell rose has have had got gets became becomes
		because as since while like with keeping kept unlike than currently presently now still previously formerly nominally
		match matches matching mirror mirrors equals similar given remaining staying reference see hold holds holding
		passend entsprechend correspondre correspondant
		usually normally typically yesterday today
		derzeit zurzeit momentan aktuell jetzt noch vorher früher normalerweise gestern heute
		actuellement maintenant encore avant auparavant normalement hier
		soll sollte muss liegt lag steht stand zeigt weil da während wie mit
		doit devrait car puisque pendant avec comme`)
)

func statesWhatIs(toks []token) bool {
	for k, t := range toks {
		if k > 0 && determiners[toks[k-1].w] && !copulas[t.w] {
			continue // "the matching quadrupole", "the reference magnet": a name
		}
		if copulas[t.w] || stateWords[t.w] || len(t.w) > 4 && strings.HasSuffix(t.w, "ed") && !strings.ContainsFunc(t.w, unicode.IsDigit) {
			return true
		}
	}
	return false
}

// historyPattern: a clause about the past or a time window ("since the
// trip", "over the last 2 hours", "seit gestern", "depuis") is history,
// whatever verb it has.
var historyPattern = mustFilter(`\b(?:(?:over|in|during|within|for|across) the (?:last|past|previous)|ago|since|` +
	`yesterday|last (?:night|week|shift|run|fill|hour|day)|earlier today|earlier$|this morning|` +
	`seit|gestern|vorhin|in den letzten|während|depuis|pendant les|au cours d\w*)\b`)

// restoreVerbs and restoreValues: a change back to an earlier value
// ("restore yesterday's value", "undo the last change", "set Q1 back to
// what it was", "setze Q1 zurück"); the value is not in the words, so it is
// no change the rules can carry out. A value phrase alone ("show
// yesterday's value") is a read.
var (
	restoreVerbs = mustFilter(`\b(?:restore|revert|undo|roll ?back|(?:put|set|bring|change|turn|roll) (?:\S+ ){0,6}back\b|go back to|` +
		`zurücksetzen|zuruecksetzen|zurück|zurueck|wiederherstellen|rückgängig|rueckgaengig|` +
		`restaure|restaurer|rétablis|rétablir|retablis|remets|remettre|annule|annuler)`)
	restoreValues = mustFilter(`\b(?:previous value|old value|original value|yesterday's value|value (?:of|from) yesterday|` +
		`vorherigen wert|alten wert|wert von gestern|valeur précédente|ancienne valeur|valeur d'hier)`)
)

// MaxChangeMessage bounds the messages the rules read a change from (in
// bytes): an operator asks for a change in a sentence or two, and a longer
// message (a pasted log, a report) is read as no change — which also keeps
// the rules' cost bounded whatever is sent.
const MaxChangeMessage = 4000

// laterPattern: a change for later ("at 14:00", "tomorrow", "as soon as",
// "dès que", "morgen") is not a change to make now; nor is one on a
// condition (conditionWords): the rules cannot tell when, so nothing is
// changed.
var laterPattern = mustFilterEach(
	`\b(?:as soon as)\b`,
	`\b(?:at \d{1,2}[:h.]\d{2})\b`,
	`\b(?:at \d{1,2} ?(?:am|pm|o'clock))\b`,
	`\b(?:tomorrow)\b`,
	`\b(?:tonight)\b`,
	`\b(?:later)\b`,
	`\b(?:(?:and )?then (?:back|put it back|set it back|restore))\b`,
	`\b(?:und dann (?:zurück|wieder zurück))\b`,
	`\b(?:puis (?:revenir|remettre))\b`,
	`\b(?:next (?:shift|fill|week|run))\b`,
	`\b(?:in \d+ (?:min|minutes|hours?|h)\b)\b`,
	`\b(?:morgen)\b`,
	`\b(?:später)\b`,
	`\b(?:heute abend)\b`,
	`\b(?:um \d{1,2}[:.]\d{2})\b`,
	`\b(?:um \d{1,2} uhr)\b`,
	`\b(?:dès que)\b`,
	`\b(?:des que)\b`,
	`\b(?:tant que)\b`,
	`\b(?:demain)\b`,
	`\b(?:plus tard)\b`,
	`\b(?:ce soir)\b`,
	`(?:^|\s)à \d{1,2}h\d{0,2}\b`,
)

// laterNear: words for a while, an event, the user's word or a time span
// that make a change for later ("… in a minute", "… after the
// injection", "…, but not yet", "… on my signal", "… for 5 minutes": a
// change to be undone, which the rules cannot do). Read from the change's
// sentence on: "Q1 tripped after the quench. Set it to 105 A" is a
// change now.
var laterNear = mustFilterEach(
	`\b(?:in (?:a|one|an|\d+) (?:minute|moment|bit|while|sec|second|hour|s|secs|seconds|mins))\b`,
	`\b(?:in (?:two|three|four|five|ten|fifteen|twenty|thirty|forty-five|sixty|a couple of|half an?) (?:minutes?|seconds?|hours?|mins?|secs?))\b`,
	`\b(?:in a few (?:minutes|seconds|hours|moments))\b`,
	`\b(?:in (?:zwei|drei|fünf|zehn|fünfzehn|zwanzig|dreißig|einer halben|ein paar) (?:sekunden|minuten|stunden?))\b`,
	`\b(?:dans (?:deux|trois|cinq|dix|quinze|vingt|trente|une demi-?|quelques) (?:secondes|minutes|heures?))\b`,
	`\b(?:eventually|next time|sometime|at some point|some day|one day|in the future|when(?:ever)? (?:you|it) (?:can|get a chance|have time))\b`,
	`\b(?:irgendwann|demnächst|nächstes mal|beim nächsten mal|la prochaine fois|un jour|prochainement|un de ces jours)\b`,
	`\b(?:temporarily|briefly|momentarily|tentatively|provisionally|experimentally|virtually|on a trial basis|for (?:a bit|a little while)|overnight|(?:on|over|this|next) (?:the )?weekend|next (?:month|year))\b`,
	`\b(?:at (?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|half past|quarter (?:past|to)))\b`,
	// A clock time as the change's time ("(14:00)", ", 2pm", "… 14:00"),
	// not one naming an event ("the 14:00 MD", "since 9am").
	`(?:^|[(,;@–—-]\s*|\b(?:at|by|around|until|till|before|after|um|vers)\s+|(?:^|[^\pL])à\s+)\d{1,2}(?::\d{2}| ?(?:am|pm))\b`,
	`\b\d{1,2}(?::\d{2}| ?(?:am|pm))\s*[.!)]*\s*$`,
	`(?:^|[^\pL])übermorgen\b`,
	`\b(?:nachher|nächste woche|nächsten (?:monat|montag|dienstag|mittwoch|donnerstag|freitag|samstag|sonntag)|in (?:einer|zwei|drei|ein paar) (?:minute|minuten|stunde|stunden))\b`,
	`\b(?:probeweise|testweise|zum test|zum testen|zeitweise|kurz)\b`,
	`\b(?:es sei denn|außer wenn|ausser wenn|in case|im fall|im falle|en cas de)\b`,
	`\bau cas où(?:[^\pL]|$)`,
	`(?:^|[^\pL])à moins que\b`,
	`\b(?:notfalls|gegebenenfalls|ggf|bei bedarf|im notfall|falls nötig|as needed|if need be|au besoin|le cas échéant|si besoin)\b`,
	`\b(?:tout à l'heure|la semaine prochaine|le mois prochain|ce week-end|cette nuit|après-demain)\b`,
	`\b(?:vorübergehend|kurzzeitig|temporairement|provisoirement|brièvement|un instant)\b`,
	`\btemporär(?:[^\pL]|$)`,
	`\b(?:soon)\b`,
	`\b(?:shortly|in a (?:moment|minute|second|sec|while)|eod|cob|(?:by |at )?(?:the )?end of (?:the )?(?:day|shift|week|run|fill))\b`,
	`\bin \d+\s*[.!]*\s*$`,
	`\b(?:the (?:moment|minute|second|instant) (?:the|it|we|you|i|they|beam))\b`,
	`\bpost-?(?:dump|injection|md|fill|quench|ramp|access|shutdown|refill|top-?up|beam)\b`,
	`\bt\s*(?:minus|-|−)\s*\d`,
	`\bin the (?:next|coming|following) (?:md|fill|shift|run|cycle|injection|hour|week|slot|window|access)\b`,
	`\b(?:(?:around|about) \d{1,2}(?::\d{2})? ?(?:am|pm|o'clock|h))\b`,
	`\b(?:gegen \d{1,2}(?:[:.]\d{2})? ?uhr)\b`,
	`\b(?:vers \d{1,2} ?h(?:\d{2})?)\b`,
	`\b(?:in \d+ (?:sekunden|minuten|stunden|std|sek))\b`,
	`\b(?:gleich danach)\b`,
	`\b(?:bald)\b`,
	`\b(?:dans (?:une?|\d+) (?:minutes?|secondes?|heures?|instant|moment))\b`,
	`\b(?:bientôt)\b`,
	`\b(?:after (?:i|we|you|the|a|an|next|each|every|lunch|midnight|noon|\d+))\b`,
	`\b(?:nach (?:der|dem|den|einer|einem|\d+))\b`,
	`\b(?:après (?:la|le|l'|les|une?|que|\d+))\b`,
	`\b(?:at (?:the )?(?:next|end of|start of|beginning of) \w+)\b`,
	`\b(?:at (?:injection|refill|top-up))\b`,
	`\b(?:after (?:injection|refill|top-?up|fill|dump|quench|ramp|access|recovery|beam|\w+ing)|on (?:the )?(?:next|following) \w+)\b`,
	`\b(?:\w+ permitting|pending (?:\w+ )?(?:approval|confirmation|sign-?off|ok|go-ahead|review|check)|subject to|vorbehaltlich|sous réserve)\b`,
	`(?:^|[,;.:]\s*|\b(?:and|then) )stand ?by\b`,
	`\b(?:während (?:wir|ich|man|die|der|das|des|dem|er|sie|es)|bei (?:der|dem|den) (?:nächsten|kommenden|folgenden)|beim (?:nächsten|kommenden)|`+
		`nach (?:rücksprache|absprache|freigabe|bestätigung|genehmigung|injektion|füllung|zugang)|erst (?:nach|wenn|ab|bei|sobald))\b`,
	`\b(?:après (?:injection|accord|validation|confirmation|vérification|remplissage)|au (?:prochain|suivant)|en attendant|une fois (?:le|la|les|l'|que|qu'))\b`,
	`(?:^|[^\pL])(?:à la (?:prochaine|suivante)|à condition qu)`,
	`\b(?:during)\b`,
	`\b(?:between (?:the )?(?:fills?|injections?|runs?|shifts?|cycles?))\b`,
	`\b(?:während (?:der|des|dem))\b`,
	`\b(?:pendant (?:la|le|l'))\b`,
	`\b(?:entre (?:les|deux) \w+)\b`,
	`\b(?:not (?:yet|now|right now|today))\b`,
	`\b(?:noch nicht)\b`,
	`\b(?:nicht jetzt)\b`,
	`\b(?:pas encore)\b`,
	`\b(?:pas maintenant)\b`,
	`\b(?:pas tout de suite)\b`,
	`\b(?:(?:but|only) wait)\b`,
	`\b(?:wait (?:for|till|until) (?:my|me|i))\b`,
	`\b(?:(?:on|at|upon) my (?:signal|mark|go|command|word|call|cue))\b`,
	// After the user's (or someone's) word or an event, before one, at
	// someone's convenience; "…, after that" / "… afterwards" ending the
	// message (a sequence goes on: "…, after that set Q2 to 98 A").
	`\b(?:after (?:my|your|our|his|her|their|confirmation|approval|sign-?off|go-?ahead|review|md|mds|maintenance|shutdown|startup|restart|tests?))\b`,
	`\b(?:(?:right |just |shortly |soon )?(?:after (?:that|this|it)|afterwards?))\s*[.!]*\s*$`,
	`\d\s*[\pL%°]*\s+(?:just |right |shortly )?before (?:the|next|a|an|my|your|our|each|every|injection|beam|md)\b`,
	`\d\s*[\pL%°]*\s+(?:kurz |gleich )?vor (?:der|dem|den|einer|einem|meine[mnr]?|unsere[mnr]?|jede[mnr]?)\b`,
	`\d\s*[\pL%°]*\s+(?:juste )?avant (?:la|le|les|une?|mon|ma|notre|votre|chaque|de|d'|l')`,
	`\b(?:at your (?:convenience|leisure|earliest convenience)|when convenient|when you have (?:a )?(?:moment|minute|second|time))\b`,
	`\b(?:nach (?:meine[mnrs]?|deine[mnrs]?|unsere[mnrs]?|ihre[mnrs]?|seine[mnrs]?)|bei gelegenheit|wenn (?:du|sie|ihr) zeit ha\w+)\b`,
	`\b(?:après (?:mon|ton|son|notre|votre|leur|ma|ta|sa|mes|tes|ses|nos|vos|leurs)|quand (?:tu peux|vous pouvez|tu auras|vous aurez))\b`,
	`(?:^|[^\pL])à (?:votre|ta) convenance\b`,
	`\b(?:when i (?:say|tell|give|confirm|ask))\b`,
	`\b(?:until i)\b`,
	`\b(?:auf mein (?:zeichen|kommando))\b`,
	`\b(?:wenn ich es sage)\b`,
	`(?:^|[^\pL])à mon signal\b`,
	`\b(?:quand je (?:le )?dis)\b`,
	`\b(?:for (?:\d+|a|an|one|two|three|five|ten|a few|half an?) ?(?:s|secs?|seconds?|mins?|minutes?|h|hrs?|hours?|days?|moment|while))\b`,
	`\b(?:für (?:\d+|eine?n?|zwei|drei|fünf|zehn|ein paar) ?(?:s|sek|sekunden?|min|minuten?|h|std|stunden?|tage?|moment))\b`,
	`\b(?:pendant (?:\d+|une?|deux|trois|cinq|dix|quelques) ?(?:s|secondes?|min|minutes?|h|heures?|jours?|instant))\b`,
	`\b(?:for (?:the )?(?:next|coming|following) (?:\d+ |a |an |one |two |three |five |ten |few |couple of )?(?:s|secs?|seconds?|mins?|minutes?|h|hrs?|hours?|days?|moment|while))\b`,
	`\b(?:for the (?:duration|length) of|für die (?:dauer|zeit) (?:des|der)|für die nächsten|pendant (?:la durée|le temps) d|pendant les (?:\d+ )?prochain)`,
	`\b(?:on (?:mon|tues|wednes|thurs|fri|satur|sun)day)\b`,
	`\b(?:on (?:the )?\d{1,2}(?:st|nd|rd|th)?(?:[./]\d{1,2}[./]?| of \w+))\b`,
	`\b(?:(?:am )?(?:montag|dienstag|mittwoch|donnerstag|freitag|samstag|sonntag))\b`,
	`\b(?:(?:lundi|mardi|mercredi|jeudi|vendredi|samedi|dimanche))\b`,
	`\b(?:at (?:noon|midnight|midday|dawn|dusk|night|the weekend))\b`,
	`\b(?:in the (?:morning|afternoon|evening|night))\b`,
	`\b(?:this (?:afternoon|evening))\b`,
	`\b(?:am (?:morgen|abend|nachmittag|vormittag|wochenende))\b`,
	`\b(?:heute (?:früh|nachmittag|nacht))\b`,
	`\b(?:ce matin)\b`,
	`\b(?:cet après-midi)\b`,
	`(?:^|[^\pL])à midi\b`,
	`(?:^|[^\pL])à minuit\b`,
	`\b(?:by (?:\d{1,2} ?(?:am|pm|h|o'clock|uhr)|noon|midnight|tonight|tomorrow|monday|friday|the (?:end|start|beginning)|end of|then))\b`,
	`\b(?:bis (?:heute abend|morgen|mittag|\d{1,2} uhr))\b`,
	`\b(?:avant (?:midi|ce soir|demain))\b`,
	`\b(?:every (?:\d+ )?(?:s|secs?|seconds?|mins?|minutes?|h|hours?|days?|shift|fill|morning|evening|night|time|cycle|injection|week))\b`,
	`\b(?:each (?:time|day|hour|morning|night|shift|fill|cycle))\b`,
	`\b(?:periodically)\b`,
	`\b(?:daily|hourly|nightly|weekly|(?:once|twice) (?:a|an|per|every) (?:day|hour|night|week|shift))\b`,
	`\b(?:täglich|stündlich|nächtlich|wöchentlich|quotidiennement|tous les (?:jours|soirs|matins))\b`,
	`\b(?:and|then) back(?: again)?\s*[.!]*\s*$`,
	`\b(?:und (?:wieder )?zurück|et retour)\s*[.!]*\s*$`,
	`\b(?:regularly)\b`,
	`\b(?:repeatedly)\b`,
	`\b(?:again and again)\b`,
	`\b(?:over and over)\b`,
	`\b(?:alle \d+ (?:sekunden|minuten|stunden|tage))\b`,
	`\b(?:jede[nrs]? (?:stunde|minute|nacht|tag|morgen|schicht|mal))\b`,
	`\b(?:regelmäßig)\b`,
	`\b(?:immer wieder)\b`,
	`\b(?:chaque (?:heure|minute|jour|fois|matin|soir|nuit))\b`,
	`\b(?:toutes les (?:\d+ )?(?:secondes|minutes|heures))\b`,
	`\b(?:régulièrement)\b`,
	`\b(?:périodiquement)\b`,
	`\bat \d{1,2}(?:h| ?uhr)?\s*[.!]*\s*$`,
)

// conditionWords start a condition ("if the beam is stable", "sobald",
// "si le faisceau…"), unless a read verb comes before ("check if…",
// "vérifie si…": a question about the machine).
var conditionWords = wordSet(`if unless once when whenever until while whilst provided providing assuming wenn falls sobald nachdem sofern solange vorausgesetzt si quand lorsque pourvu`)

// notConditionAfterWhile: "while keeping Q7…", "while you're at it" say how
// or that it is now, not when.
var notConditionAfterWhile = wordSet(`keeping holding maintaining leaving you're youre you at`)

// wordsOf is tokens' words, a space between them.
func wordsOf(ts []token) string {
	ws := make([]string, len(ts))
	for k, t := range ts {
		ws[k] = t.w
	}
	return strings.Join(ws, " ")
}

// politeIf: the words after "if" ending a request that make it polite,
// not conditional.
var politeIf = map[string]bool{"possible": true, "at all possible": true, "you could": true, "you can": true, "you would": true,
	"you don't mind": true, "you dont mind": true, "you please": true}

// toldVerbs ask to be told ("ping me when…", "préviens-moi quand…").
var toldVerbs = wordSet(`tell let ping notify inform alert message call text sag sage informiere benachrichtige dis préviens prévenez`)

// doneAfter: the change's own end after a condition word, to the clause's
// end ("… when done", "… once it's finished", "… wenn erledigt", "… quand
// c'est fait"; not "… when done with Q2").
var doneAfter = regexp.MustCompile(`^(?:(?:it's|it is|it has been|that's|that is|you're|you are|you've|this is|es|das|c'est|ce sera|ça)\s+)?` +
	`(?:done|finished|complete|completed|through|fertig|erledigt|geschehen|fait|fini|terminé)(?: please| thanks| bitte| danke| merci)?$`)

// onCondition reports a condition in the clauses.
func onCondition(clauses []clause) bool {
	for _, c := range clauses {
		for i, t := range c.toks {
			if !conditionWords[t.w] || (t.w == "while" || t.w == "whilst") && i+1 < len(c.toks) && notConditionAfterWhile[c.toks[i+1].w] {
				continue
			}
			if t.w == "if" && politeIf[wordsOf(c.toks[i+1:])] {
				continue // "… if possible", "… if you could", "… if you don't mind": a polite request
			}
			if t.w == "if" && i > 0 && c.toks[i-1].w == "it" && i+2 < len(c.toks) && c.toks[i+1].w == "you" && c.toks[i+2].w == "could" {
				continue // "I'd appreciate it if you could …"
			}
			if t.w == "once" && (i > 0 && c.toks[i-1].w == "at" || i+1 == len(c.toks) || c.toks[i+1].w == "more" || c.toks[i+1].w == "again") {
				continue // "… at once" is now; "… once", "… once more", one time
			}
			if i > 1 && recipients[c.toks[i-1].w] && (readVerbs[c.toks[i-2].w] || toldVerbs[c.toks[i-2].w]) || i > 0 && doneAfter.MatchString(wordsOf(c.toks[i+1:])) {
				continue // "… and tell me when done", "ping me once it is finished": what to say after the change
			}
			if i > 0 && (readVerbs[c.toks[i-1].w] || c.toks[i-1].w == "see" || c.toks[i-1].w == "know" || c.toks[i-1].w == "ask" ||
				c.toks[i-1].w == "prüfe" || c.toks[i-1].w == "ob") {
				continue
			}
			return true
		}
	}
	return false
}

// nameList joins a change verb's list of devices that commas split into
// clauses ("Set Q1, Q2 and Q3 to 105 A") into one clause: the list is the
// change's target.
func nameList(msg string, cs []clause) []clause {
	if len(cs) < 2 || !strings.Contains(msg, ",") {
		return cs
	}
	out := make([]clause, 0, len(cs))
	for i := 0; i < len(cs); i++ {
		c := cs[i]
		for i+1 < len(cs) && listGoesOn(msg, c, cs[i+1]) {
			c = clause{toks: append(slices.Clip(c.toks), cs[i+1].toks...), question: cs[i+1].question}
			i++
		}
		out = append(out, c)
	}
	return out
}

// listGoesOn reports a clause that is a change verb and device codes only
// ("Set Q1", "Set Q1 Q2", "Turn off Q1") followed, after a comma, by a
// clause starting with a device code (or a joiner and one).
func listGoesOn(msg string, c, next clause) bool {
	last, first := c.toks[len(c.toks)-1], next.toks[0]
	if listJoiners[first.w] && len(next.toks) > 1 { // "Set Q1, Q2, and Q3 to 105 A"
		first = next.toks[1]
	}
	if !deviceCode(first.w) || !deviceCode(last.w) || strings.TrimSpace(msg[last.end:next.toks[0].start]) != "," ||
		slices.ContainsFunc(next.toks, func(t token) bool { return copulas[t.w] || statedWords[t.w] || stateWords[t.w] }) {
		return false // "Set Q1, Q2 is at 98 A": what Q2 is, not a list
	}
	k := slices.IndexFunc(c.toks, func(t token) bool { return verbOf(t.w) != "" })
	return k >= 0 && k+1 < len(c.toks) && !slices.ContainsFunc(c.toks[k+1:], func(t token) bool {
		// "Turn off Q1, Q2 and Q3", "Set the BTS Q1, Q2 and Q3 currents…"
		return !listWord(t.w) && particleStates[t.w] == "" && !determiners[t.w] && !numberNouns[t.w] && !allCaps(msg[t.start:t.end])
	})
}

// devicesAlone reports a verbless clause right after a change that names a
// device the change does not, with what to do with it ("Q2 and Q3", "Q2
// off", "Q2 to nominal"), not what it is or that it stays ("Q2 is at 98
// A", "Q2 unchanged", "Q2 dropped…"), and no value (unsaidValue's), nor a
// label ("Q2: 98 A").
func devicesAlone(masked string, c clause, changes []RequestedChange) bool {
	if strings.HasPrefix(strings.TrimLeft(masked[c.toks[len(c.toks)-1].end:], " "), ":") || slices.ContainsFunc(c.toks, func(t token) bool {
		return copulas[t.w] || statedWords[t.w] || stateWords[t.w] || exclusionAfter[t.w] || exclusionBefore[t.w] || setApart[t.w] || negationWords[t.w] ||
			readVerbs[t.w] || startsNumber(t.w) || len(t.w) > 4 && strings.HasSuffix(t.w, "ed")
	}) {
		return false
	}
	return slices.ContainsFunc(c.toks, func(t token) bool {
		n := distinctNames(t.w)
		return len(n) > 0 && !slices.ContainsFunc(changes, func(rc RequestedChange) bool { return slices.Contains(distinctNames(rc.Target), n[0]) })
	})
}

// devicesAfterValue returns the devices a change clause ends with after
// its value or state, joined by "and" ("Set Q1 to 105 A and Q2", "Turn Q1
// off and Q2"), that no change names: a change for them too, or a read?
// "" when there are none.
func devicesAfterValue(masked string, c clause, changes []RequestedChange) string {
	k := len(c.toks)
	for k > 0 && (listWord(c.toks[k-1].w) || joiner(c.toks[k-1].w)) {
		k--
	}
	if k == len(c.toks) || k == 0 || !joiner(c.toks[k].w) ||
		!startsNumber(c.toks[k-1].w) && !KnownUnit(c.toks[k-1].w) && particleStates[c.toks[k-1].w] == "" {
		return ""
	}
	tail := c.toks[k:]
	if !slices.ContainsFunc(tail, func(t token) bool {
		n := distinctNames(t.w)
		return len(n) > 0 && !slices.ContainsFunc(changes, func(rc RequestedChange) bool { return slices.Contains(distinctNames(rc.Target), n[0]) })
	}) {
		return ""
	}
	return span(masked, tail)
}

// alsoJoiners join what follows to what came before as well ("… and also
// Q2"); joiner is a word of a sequence or of alsoJoiners ("and", "then",
// "also", "und", "puis"…), which starts a clause of its own.
var alsoJoiners = wordSet(`also auch aussi`)

func joiner(w string) bool { return sequenceWords[w] || alsoJoiners[w] }

// listJoiners join the devices of a list ("Q1, Q2 and Q3").
var listJoiners = wordSet(`and und et`)

// listWord reports a word of a list of devices: a code or a joiner.
func listWord(w string) bool { return deviceCode(w) || listJoiners[w] }

// allCaps reports an acronym: two to five capitals ("BTS", "SR").
func allCaps(w string) bool {
	return len(w) >= 2 && len(w) <= 5 && !strings.ContainsFunc(w, func(r rune) bool { return r < 'A' || r > 'Z' })
}

// deviceCode reports a word that is a device's code: letters, then
// digits, maybe letters again ("q1", "hc3", "cav2", "q1a").
func deviceCode(w string) bool {
	if len(w) < 2 || len(w) > 10 || !unicode.IsLetter(rune(w[0])) || !strings.ContainsFunc(w, unicode.IsDigit) {
		return false
	}
	return !strings.ContainsFunc(w, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// FromMessage applies the rules to one user message. The rules are a pure
// function of the message, and a turn asks them about the same message
// several times (the task, the classifier, the plan's needs), so recent
// findings are remembered (memo.go).
func FromMessage(msg string) Finding {
	if f, ok := findings.get(msg); ok {
		return f
	}
	f := fromMessage(msg)
	findings.put(msg, f)
	return f.clone()
}

// fromMessage applies the rules.
func fromMessage(msg string) Finding {
	if len(msg) > MaxChangeMessage {
		in := Intent{Kind: KindRead}
		if hasChangeVerb(msg) {
			in.Note = "Your message is too long to be read as a change request, so nothing will be changed. " +
				"To change a setting, ask for it in a short message of its own, for example \"set Q1 to 105 A\"."
		}
		return Finding{Intent: in, Reason: ReasonTooLong}
	}
	if hiddenIn(msg) && hasChangeVerb(strings.Map(dropHidden, msg)) {
		in := Intent{Kind: KindRead, Note: "Your message holds invisible characters (zero-width spaces, text direction marks), " +
			"so what it shows may not be what it says, and nothing will be changed. Type the request again, for example \"set Q1 to 105 A\"."}
		return Finding{Intent: in, Reason: ReasonHidden}
	}
	masked, reported := maskReported(unmark(msg))
	norm := strings.ReplaceAll(strings.ToLower(masked), "’", "'")
	clauses := nameList(masked, scan(masked))
	if negatedChange(clauses) {
		in := Intent{Kind: KindRead}
		if m := whyNot.FindStringSubmatch(norm); m != nil {
			// "Why don't you set Q1 to 105 A": a suggestion, or a question.
			in.Note = "Your message asks why the change is not made (\"" + strings.TrimSpace(m[1]) + "\"), so it was read as a question and nothing will be changed. " +
				"To make the change, ask for it, for example \"please set Q1 to 105 A\"."
		} else if slices.ContainsFunc(clauses, func(c clause) bool { return readClause(masked, c).change }) {
			// "Set Q1 to 105 A and change nothing else": which of the two is meant is the rules' guess.
			in.Note = "Your message asks for a change and says not to change something as well, so nothing will be changed: " +
				"ask for the change on its own, for example \"set Q1 to 105 A\"."
		}
		return Finding{Intent: in, Reason: ReasonNegated}
	}
	if words := takenBack(norm); words != "" {
		// "Set Q1 to 105 A for testing", "… just kidding", "dry run: …": a
		// change beside them is not to be made, and the operator is told.
		in := Intent{Kind: KindRead}
		if slices.ContainsFunc(clauses, func(c clause) bool { return readClause(masked, c).change }) {
			in.Note = "Your message says its change is not to be carried out (\"" + shorten(words) + "\"), so nothing will be changed. " +
				"To make the change, ask for it on its own, for example \"set Q1 to 105 A\"."
		}
		return Finding{Intent: in, Reason: ReasonNegated}
	}
	if m := notSerious.FindStringSubmatch(norm); m != nil {
		f, _ := readWithNote(ReasonNegated, "Your message laughs or winks (\""+m[1]+"\"), so whether its change is meant would be a guess and nothing will be changed: "+
			"to make the change, ask for it on its own, for example \"set Q1 to 105 A\".")
		return f
	}
	if hypotheticalPattern.MatchString(norm) || codeRequest.MatchString(norm) {
		in := Intent{Kind: KindHypothetical}
		if m := mayAsked.FindStringSubmatch(norm); m != nil && (hasChangeVerb(masked) || valueWithoutRequest(masked, clauses)) {
			// "Would it be possible to set Q1 to 105 A?" may be a polite
			// request: the operator is told it was read as a question.
			in.Note = "Your message asks whether the change can be made, or wishes for it (\"" + m[1] + m[2] + "\"), rather than asking for it, so nothing will be changed. " +
				"To make the change, ask for it, for example \"please set Q1 to 105 A\"."
		}
		return Finding{Intent: in, Reason: ReasonHypothetical}
	}
	var (
		changes  []RequestedChange
		changed  bool
		question bool
		history  bool
		unclear  string // the first change verb's clause without a usable value
		open     bool   // … because it leaves its value open ("105 or 140 A")
		shown    bool   // … because it sets something other than the machine ("set the plot range to 2 hours")
		marked   string // the first change request ending in "?"
		prev     bool   // the clause before was a change: a verbless "and Q2 to 98 A" continues it
		from     int    // where the first change request starts in masked
		stranded string // a verbless "Q2 to 98 A" that continues no change ("…, wait 2 s, then Q2 to 98 A")
		lastVerb string // the verb of the last change: a verbless "Q2 by 3 A" after it takes its sign
		listed   string // devices alone right after a change ("Turn Q1 off, Q2 and Q3")
	)
	for _, c := range clauses {
		r := readClause(masked, c)
		switch {
		case r.change:
			if !changed {
				from = c.toks[0].start
			}
			if unclear == "" && r.missed != "" {
				unclear = r.missed // "Set Q1 to 105 A and raise Q2": the second change has no value
			}
			changes = append(changes, r.changes...)
			changed, prev, lastVerb = true, true, r.lastVerb
			if listed == "" {
				listed = devicesAfterValue(masked, c, changes) // "Set Q1 to 105 A and Q2": Q2 too?
			}
			continue
		case r.question == firmQuestion:
			question = true
		case r.question == markedQuestion:
			question = true
			if r.verb && marked == "" {
				marked = span(masked, c.toks)
			}
		case r.history:
			history = true
		case r.verb && unclear == "":
			// Quoted as typed ("zero", not the 0 it was read as): masking keeps every byte's place.
			unclear, open, shown = span(msg, c.toks), leavesValueOpen(masked, c.toks), presentation(c.toks)
		case r.verbless && prev:
			if more, ok := signedValueChanges(masked, "", direction(lastVerb, c.toks), c.toks); ok {
				changes = append(changes, more...)
				continue
			}
			if stranded == "" && givesDeviceValue(masked, c.toks) {
				stranded = span(masked, c.toks) // "Set Q1 to 105 A, Q2 by 3 A": by how much in which direction?
			}
			if listed == "" && devicesAlone(masked, c, changes) {
				listed = span(masked, c.toks) // "Turn Q1 off, Q2 and Q3", "…, Q2 off": a change for them too?
			}
		case r.verbless && r.question == notQuestion && stranded == "" && givesDeviceValue(masked, c.toks):
			stranded = span(masked, c.toks)
		}
		prev = false
	}
	if v, words := actionAsked(masked, clauses); changed && v != "" {
		f, _ := readWithNote(ReasonOpenValue, "Your message also asks for an action (\""+shorten(words)+"\") the rules do not read as a change of a setting, "+
			"so nothing will be changed: ask for the change on its own, for example \"set Q1 to 105 A\".")
		return f
	}
	if changed && stranded != "" {
		f, _ := readWithNote(ReasonOpenValue, "Your message gives a value (\""+shorten(stranded)+"\") apart from its change, after or before words that are not part of it, "+
			"so nothing will be changed: which changes are meant, and when, would be a guess. Ask for the changes together, for example \"set Q1 to 105 A and Q2 to 98 A\".")
		return f
	}
	if changed && unclear != "" && !shown {
		// "Set Q1 to 105 A, then set Q2", "… and raise Q2": the second change, without its value, was dropped without a word.
		f, _ := readWithNote(ReasonOpenValue, "Your message asks for another change without its value (\""+shorten(unclear)+"\"), so nothing will be changed: "+
			"say each change with its value, for example \"set Q1 to 105 A and Q2 to 98 A\".")
		return f
	}
	if words := cmp.Or(listed, alsoOther(masked, norm, clauses, changes, from)); changed && words != "" {
		f, _ := readWithNote(ReasonOpenValue, "Your message asks for its change on another device as well (\""+shorten(words)+"\"), so nothing will be changed: "+
			"say each change with its device, for example \"set Q1 and Q2 to 105 A\".")
		return f
	}
	if words := othersValue(masked, norm, clauses, changes, from); changed && words != "" {
		f, _ := readWithNote(ReasonOpenValue, "Your message gives another device a value (\""+shorten(words)+"\") without asking to set it, so nothing will be changed: "+
			"a change for it too, or what is expected of it? Say each change, for example \"set Q1 to 105 A and Q2 to 98 A\".")
		return f
	}
	if words := stateApart(masked, clauses, changes); changed && words != "" {
		f, _ := readWithNote(ReasonOpenValue, "Your message names a state (\""+shorten(words)+"\") that none of its changes asks for, so nothing will be changed: "+
			"ask for each change with its own verb, for example \"set Q1 to 105 A and turn cavity 2 off\".")
		return f
	}
	if changed {
		if f, held := heldBack(msg, masked, norm, clauses, changes, from); held {
			return f
		}
	}
	restore := !question && restoreVerbs.MatchString(norm) || (changed || unclear != "") && restoreValues.MatchString(norm)
	if !changed && !reported.change && restoreAsked(norm) && !restoreNotAsked(masked, clauses) && !strings.HasSuffix(strings.TrimSpace(norm), "?") &&
		!laterPattern.MatchString(norm) && !onCondition(clauses) {
		text, start := restoreClause(masked, clauses)
		rc, held, ok := datedRestore(text)
		if held != "" {
			f, _ := readWithNote(ReasonOpenValue, held)
			return f
		}
		if ok {
			if isLater(masked, norm, clauses, start) {
				return laterFinding
			}
			if openTime.MatchString(norm[start:]) {
				in := Intent{Kind: KindRead, Note: "\"" + shorten(text) + "\" gives no single time to go back to (two, or an estimate), so nothing will be changed. " +
					"Ask for one, for example \"restore Q1 to its value of 2 hours ago\"."}
				return Finding{Intent: in, Reason: ReasonOpenValue}
			}
			if f, held := heldBack(msg, masked, norm, clauses, []RequestedChange{rc}, start); held {
				return f
			}
			return Finding{Intent: Intent{Kind: KindChange, Changes: []RequestedChange{rc}}, Reason: ReasonRestoreAt}
		}
	}
	later := changed && isLater(masked, norm, clauses, from)
	if changed && !(restore && !hasAbsolute(changes)) && !later {
		return Finding{Intent: Intent{Kind: KindChange, Changes: changes}, Reason: ReasonChange}
	}
	in := Intent{Kind: KindRead}
	ensure := ensured(msg, masked, norm, reported.change)
	switch {
	case later:
		return laterFinding
	case restore:
		in.Note = "You asked to go back to an earlier value; nothing will be changed, because a value to set must be in your own words: " +
			"look up the value (for example its history), then ask for it, for example \"set Q1 to 92 A\"."
		return Finding{Intent: in, Reason: ReasonRestore}
	case reported.change:
		in.Note = "The change in your message is quoted or reported (" + reported.what + "), not asked for, so nothing will be changed. " +
			"To change a setting, ask for it in your own words, for example \"set Q1 to 105 A\"."
		return Finding{Intent: in, Reason: ReasonReported}
	case marked != "":
		in.Note = "Your message \"" + shorten(marked) + "?\" ends with a question mark, so it was read as a question and nothing will be changed. " +
			"To change the setting, ask for it without one, for example \"please set Q1 to 105 A\"."
	case ensure != "":
		// "Make sure Q1 is at 105 A", "Stell sicher, dass Q1 auf 105 A steht": a change or a check?
		in.Note = "Your message asks to make sure of a value (\"" + ensure + "\") rather than to set it, so nothing will be changed. " +
			"To set it, ask for it, for example \"set Q1 to 105 A\"."
		return Finding{Intent: in, Reason: ReasonNoChange}
	case unclear != "" && !question && !history && shown:
		in.Note = "\"" + shorten(unclear) + "\" sets something other than the machine (a plot, a range, an axis, a file, a model, a reminder), " +
			"so nothing on the machine will be changed."
		return Finding{Intent: in, Reason: ReasonNoChange}
	case unclear != "" && !question && !history && groupedNumber.MatchString(unclear):
		in.Note = noteGrouped(groupedNumber.FindStringSubmatch(unclear)[1])
		return Finding{Intent: in, Reason: ReasonOpenValue}
	case unclear != "" && !question && !history && open:
		in.Note = "\"" + shorten(unclear) + "\" gives no single value (two, a range, a bound or an estimate, one that is not a number or a unit capgraph does not know), so nothing will be changed. " +
			"Ask for the one value you want, for example \"set Q1 to 105 A\"."
		return Finding{Intent: in, Reason: ReasonOpenValue}
	case unclear != "" && !question && !history && switchMixed(unclear) != "":
		what, example := switchMixed(unclear), "turn off cavity 2 and set Q1 to 105 A"
		if what == twoStatesAsked {
			example = "turn cavity 2 off and turn cavity 3 on"
		}
		in.Note = "\"" + shorten(unclear) + "\" asks " + what + " under one verb, so nothing will be changed: " +
			"ask for each change with its own verb, for example \"" + example + "\"."
		return Finding{Intent: in, Reason: ReasonUnclear}
	case unclear != "" && !question && !history:
		in.Note = "\"" + shorten(unclear) + "\" names no value (or an amount without a direction), so nothing will be changed. " +
			"To change a setting, give the value, for example \"set Q1 to 105 A\" or \"raise Q1 by 5 A\"."
		return Finding{Intent: in, Reason: ReasonUnclear}
	}
	switch {
	case history:
		return Finding{Intent: in, Reason: ReasonHistory}
	case question:
		return Finding{Intent: in, Reason: ReasonQuestion}
	}
	if v, c := actionAsked(masked, clauses); v != "" && !reported.change {
		in.Note = "\"" + shorten(c) + "\" asks for an action (\"" + v + "\") the rules do not read as a change of a setting, so nothing will be changed. " +
			"A setting is changed by its value or state, for example \"set Q1 to 105 A\" or \"turn Q1 off\"."
		if factorVerbs[v] {
			in.Note = "\"" + shorten(c) + "\" asks to change a setting by a factor (\"" + v + "\"), which the rules do not read as a value, so nothing will be changed. " +
				"Ask for the value to reach, for example \"set Q1 to 210 A\", or the amount, \"raise Q1 by 105 A\"."
		}
		return Finding{Intent: in, Reason: ReasonNoChange}
	}
	switch {
	case reported.change:
	case valueWithoutRequest(masked, clauses):
		in.Note = "Your message gives a device a value (\"" + shorten(strings.TrimSpace(msg)) + "\") but asks for no change in words capgraph reads as one, " +
			"so nothing will be changed. To change a setting, ask for it, for example \"set Q1 to 105 A\"."
	case !question && stateApart(masked, clauses, nil) != "" && len(statedIdentifiers(masked)) > 0 &&
		!slices.ContainsFunc(clauses, func(c clause) bool {
			return slices.ContainsFunc(c.toks, func(t token) bool { return verbOf(t.w) != "" })
		}):
		// "Cavity 2 off", "Q1 on please": a switch, or a question without its mark?
		in.Note = "Your message names a state for a device (\"" + shorten(strings.TrimSpace(msg)) + "\") but asks for no change in words capgraph reads as one, " +
			"so nothing will be changed. To switch it, ask for it, for example \"turn cavity 2 off\"."
	}
	return Finding{Intent: in, Reason: ReasonNoChange}
}

// ensured is the words of a message asking to make sure of a value
// (ensureAsked, a value after a marker), or "" (masked: the message with
// reported words blanked; norm: it in lower case). The words after "make
// sure" may be masked as reported ("…, dass Q1 auf 105 A steht"), so then
// the message is read whole, unless a change in it is reported.
func ensured(msg, masked, norm string, reportedChange bool) string {
	if reportedChange {
		return ""
	}
	if masked != msg && !ensureAsked.mayMatch(norm) {
		norm = strings.ReplaceAll(strings.ToLower(msg), "’", "'") // words were masked: read them all
	}
	if m := ensureAsked.FindStringSubmatch(norm); m != nil && valueAfterMarker.MatchString(norm) {
		return m[1]
	}
	return ""
}

// ensureAsked: a request to make sure a setting has a value ("Make sure
// Q1 is at 105 A"), which may be meant as a change or a check.
var ensureAsked = mustFilter(`^(?:(?:please|pls|ok|and|now|bitte|s'il te plaît|stp|svp)[\s,]+)*(make sure|make certain|ensure|see to it|stelle? sicher|sorge? dafür|assure-toi|assurez-vous|veille à|veillez à)\b`)

// valueAfterMarker: a number after a value word ("at 105", "auf 105",
// "à 105", "= 105").
var valueAfterMarker = regexp.MustCompile(`(?:\b(?:to|at|auf)|(?:^|[^\pL])à|=|→)\s*[-+]?\d`)

// loadVerbs load settings into the machine ("load the snapshot").
var loadVerbs = wordSet(`load lade laden`)

// actionVerbs ask for an action on the machine that is no setting's value
// or on/off: the rules read none as a change, and say so.
var actionVerbs = wordSet(`open close shut insert retract extract start stop restart degauss cycle standardize standardise toggle
	acknowledge trigger fire inject dump abort match copy kill trip load lade laden swap exchange interchange
	tausche vertausche tauschen vertauschen échange échangez échanger permute permutez permuter intervertis intervertir
	double halve triple quadruple multiply divide scale verdopple verdoppeln verdoppele halbiere halbieren verdreifache multipliziere
	skaliere doublez doubler divise divisez diviser triplez tripler multiplie multipliez multiplier
	öffne öffnen schließe schliesse schließen starte starten stoppe stoppen zyklisiere quittiere
	ouvre ouvrez ouvrir ferme fermez fermer démarre démarrez démarrer arrête arrêtez arrêter insère insérez retire retirez`)

// factorVerbs change a setting by a factor: actionVerbs whose note asks
// for the value to reach.
var factorVerbs = wordSet(`double halve triple quadruple multiply divide scale verdopple verdoppeln verdoppele halbiere halbieren
	verdreifache multipliziere skaliere doublez doubler divise divisez diviser triple triplez tripler multiplie multipliez multiplier`)

// actionNotObject after an action verb make it no action on a thing
// ("start by…", "start with…", "stop at…").
var actionNotObject = wordSet(`by with from over at in to for again here there now check checking mit bei par avec`)

// actionAsked is the action verb and the clause of a message that asks
// for an action on something at a clause's start ("Close valve 3", "Start
// the orbit feedback", "Öffne Ventil 3"); "", "" when there is none, or
// the action is on the answer ("open the plot").
func actionAsked(msg string, clauses []clause) (string, string) {
	for _, c := range clauses {
		for k, t := range c.toks {
			// At the clause's start (after fillers) or right after a joiner:
			// "Show me Q1 and close valve 3".
			// An amount verb is an action without its amount ("retire le
			// scraper"), a change with it ("retire 2 A de Q1").
			amount := amountVerbs[t.w] != 0
			if !actionVerbs[t.w] || verbOf(t.w) != "" && !amount || k > 0 && !sequenceWords[c.toks[k-1].w] && slices.ContainsFunc(c.toks[:k], func(p token) bool { return !fillers[p.w] }) {
				continue
			}
			if amount && slices.ContainsFunc(c.toks[k+1:], func(t token) bool { return startsNumber(t.w) }) {
				continue
			}
			end := len(c.toks)
			for j := k + 1; j < len(c.toks); j++ {
				if sequenceWords[c.toks[j].w] {
					end = j
					break
				}
			}
			obj := c.toks[k+1 : end]
			// A snapshot or a file loaded is written to the machine; opened, it is shown.
			if len(obj) == 0 || presentation(obj) && !loadVerbs[t.w] || indefinite[obj[0].w] || actionNotObject[obj[0].w] || strings.HasSuffix(obj[0].w, "ing") {
				continue // "start by showing me…", "stop showing plots"
			}
			return t.w, span(msg, c.toks[k:end])
		}
	}
	return "", ""
}

// valueWithoutRequest reports a message the rules read as no change that
// gives a device named by a number a value in a unit ("Q1 → 105 A", "Q1
// should be 105 A", "Pon Q1 a 105 A"): it may be meant as a change, so the
// operator is told none was read. Not when the message asks to read
// something ("plot Q1 at 105 A").
func valueWithoutRequest(msg string, clauses []clause) bool {
	found := false
	for _, c := range clauses {
		i := 0
		for i < len(c.toks) && fillers[c.toks[i].w] {
			i++
		}
		if i < len(c.toks) && readVerbs[c.toks[i].w] && !(giveVerbs[c.toks[i].w] && i+1 < len(c.toks) && !recipients[c.toks[i+1].w]) {
			return false // "plot Q1 at 105 A", "give me Q1 at 105 A"; not "give Q1 another 5 A"
		}
		if found || slices.ContainsFunc(c.toks, func(t token) bool {
			return copulas[t.w] || statedWords[t.w] || len(t.w) > 4 && strings.HasSuffix(t.w, "ed") && !strings.HasSuffix(t.w, "eed") && !strings.ContainsFunc(t.w, unicode.IsDigit)
		}) {
			continue // "Q1 is at 105 A", "Q1 tripped at 105 A": what is or was ("proceed" is no past)
		}
		for k, t := range c.toks {
			if !startsNumber(t.w) || clockLike(msg, t) || !numberToken(msg, t) {
				continue
			}
			// A channel's name takes a number without a unit, last in the
			// clause ("caput BTS:MAG:Q1:CURRENT 105", "BTS:MAG:Q1:CURRENT = 105").
			last := !slices.ContainsFunc(c.toks[k+1:], func(t token) bool { return !endsRequest(t.w) })
			if _, unit, ok := ParseQuantity(msg[t.start:]); ok && (unit != "" && !timeWords[strings.ToLower(unit)] || unit == "" && last && channelNamed(c.toks)) {
				found = true
				break
			}
		}
	}
	return found && len(statedIdentifiers(msg)) > 0
}

// giveVerbs read ("give me Q1", "get me Q1") unless a device is given
// something or brought somewhere ("give Q1 another 5 A", "get Q1 to
// 105 A"); recipients are who is given a reading.
var (
	giveVerbs  = wordSet(`give get gib donne donnez`)
	recipients = wordSet(`me us mir uns moi nous`)
)

// channelNamed reports a channel's name among a clause's words: letters
// and a colon between them ("BTS:MAG:Q1:CURRENT", "SR:C03-MG{PS}").
func channelNamed(toks []token) bool {
	return slices.ContainsFunc(toks, func(t token) bool {
		i := strings.IndexByte(t.w, ':')
		return i > 0 && i < len(t.w)-1 && strings.ContainsFunc(t.w[i+1:], unicode.IsLetter)
	})
}

// statedWords say what a device reads or did ("Q1 reads 105 A").
var statedWords = wordSet(`reads shows looks sits went fell rose stays remains liest zeigt steht lag lit affiche montre`)

// openTime: words that leave the time of a change back open ("yesterday's
// value or so", "roughly…", "2 hours ago, or 3 hours ago").
var openTime = mustFilter(`\b(?:or so|roughly|about|around|approx\w*|circa|give or take|more or less|or (?:\d|an?|one|two|three|maybe)|` +
	`ungefähr|ungefaehr|etwa|zirka|oder (?:so|\d|eine?|zwei|drei)|environ|ou (?:\d|une?|deux|trois))\b|(?:^|[^\pL])à peu près\b`)

// sentenceEnd returns where the sentence holding text[at] ends: at the
// first ".", "!", "?" or ";" after it that a space or the end follows, or
// a new line.
func sentenceEnd(text string, at int) int {
	for i := at; i < len(text); i++ {
		if text[i] == '\n' || strings.IndexByte(".!?;", text[i]) >= 0 && (i+1 == len(text) || text[i+1] == ' ' || text[i+1] == '\t') {
			return i
		}
	}
	return len(text)
}

// sentenceStart returns where the sentence holding text[at] starts: after
// the last ".", "!", "?" or ";" before it that a space follows, or a new
// line.
func sentenceStart(text string, at int) int {
	for i := at - 1; i > 0; i-- {
		if text[i] == '\n' || (text[i] == ' ' || text[i] == '\t') && strings.IndexByte(".!?;", text[i-1]) >= 0 {
			return i + 1
		}
	}
	return 0
}

// givesDeviceValue reports a clause naming a device by a number that
// gives a value or an amount after a marker ("Q2 to 98 A", "Q2 by 3 A"),
// and states nothing ("Q2 is at 98 A", "(currently 92 A)", "Q2 dropped to
// 98 A").
func givesDeviceValue(masked string, toks []token) bool {
	for k := 0; k+1 < len(toks); k++ {
		if (toMarkers[toks[k].w] || byMarkers[toks[k].w]) && startsNumber(toks[k+1].w) && !clockLike(masked, toks[k+1]) && numberToken(masked, toks[k+1]) {
			return !statesWhatIs(toks) && !slices.ContainsFunc(toks, func(t token) bool { return statedWords[t.w] }) &&
				len(statedIdentifiers(span(masked, toks))) > 0
		}
	}
	return false
}

// alsoWords ask for a change once more on another device ("Q2 too", "do
// the same for Q2", "Q2 likewise", "dasselbe für Q2", "Q2 aussi").
var alsoWords = mustFilter(`(?:^|[^\pL\pN])(?:too|as well|likewise|(?:do|the) same|same (?:for|with|on)|ditto|idem|` +
	`auch|ebenfalls|ebenso|genauso|dasselbe|das gleiche|aussi|également|pareil|de même|la même chose)(?:$|[^\pL\pN])`)

// sameAs compares: "the same value as Q2", "same as Q2" say what the value
// is, not to change Q2.
var sameAs = regexp.MustCompile(`\bsame(?: \w+)? as\b`)

// alsoOther is the clause of a message asking changes (from masked[from:]
// on; norm is masked in lower case) that asks for one of them again on a device no change names ("Set
// Q1 to 105 A. Q2 too.", "… and do the same for Q2"): read alone, the
// message would change Q1 and leave the operator believing Q2 was asked
// for. A clause stating what is ("Q2 is high too") is no request. ""
// when there is none.
func alsoOther(masked, norm string, clauses []clause, changes []RequestedChange, from int) string {
	if !alsoWords.mayMatch(norm) {
		return ""
	}
	var named []identifier
	for _, c := range changes {
		named = append(named, statedIdentifiers(c.Target)...)
	}
	for _, c := range clauses {
		text := span(masked, c.toks)
		if c.toks[len(c.toks)-1].end <= from || !alsoWords.re.MatchString(strings.ToLower(text)) || sameAs.MatchString(strings.ToLower(text)) || slices.ContainsFunc(c.toks, func(t token) bool {
			return copulas[t.w] || stateWords[t.w] && t.w != "as" || statedWords[t.w] || readVerbs[t.w] || negationWords[t.w] // "as well"
		}) {
			continue
		}
		for _, id := range statedIdentifiers(text) {
			if !slices.ContainsFunc(named, func(n identifier) bool { return n.String() == id.String() }) {
				return text
			}
		}
	}
	return ""
}

// othersValue is the clause of a message asking changes (masked[from:]
// on) that says what a device no change names should be, or gives it a
// value along with them ("Set Q1 to 105 A and Q2 should be 98 A", "… and
// Q2 needs 98 A", "… along with Q2 at 98 A", "…, Q2 soll auf 98 A"): a
// change for it too, or what is expected of it? Read alone, the message
// would change Q1 and leave the operator believing Q2 was asked for. ""
// when there is none.
func othersValue(masked, norm string, clauses []clause, changes []RequestedChange, from int) string {
	along := alongWith.MatchString(norm) // norm: masked in lower case, for a quick look
	var named []string
	for _, c := range clauses {
		if c.toks[len(c.toks)-1].end <= from || !slices.ContainsFunc(c.toks, func(t token) bool { return normativeWords[t.w] }) &&
			!(along && alongWith.MatchString(strings.ToLower(span(masked, c.toks)))) {
			continue
		}
		if named == nil {
			named = []string{}
			for _, rc := range changes {
				named = append(named, distinctNames(rc.Target)...)
			}
		}
		// The clause's value, and the devices it names with its values left
		// out ("Q1 should then read 105 A" names Q1, not "read 105").
		var kept []string
		valued := false
		for k := 0; k < len(c.toks); k++ {
			t := c.toks[k]
			if _, unit, ok := ParseQuantity(masked[t.start:]); startsNumber(t.w) && ok && unit != "" {
				valued = valued || !timeWords[strings.ToLower(unit)]
				if k+1 < len(c.toks) && KnownUnit(c.toks[k+1].w) {
					k++
				}
				continue
			}
			kept = append(kept, masked[t.start:t.end])
		}
		if valued && slices.ContainsFunc(distinctNames(strings.Join(kept, " ")), func(n string) bool { return !slices.Contains(named, n) }) {
			return span(masked, c.toks)
		}
	}
	return ""
}

// normativeWords say what should be ("Q2 should be 98 A", "Q2 muss auf
// 98 A", "Q2 doit être à 98 A").
var normativeWords = wordSet(`should must needs need ought soll sollte sollen muss müsste muß doit devrait devraient faut`)

// alongWith gives a device a value beside a change ("… along with Q2 at
// 98 A", "zusammen mit", "ainsi que").
var alongWith = regexp.MustCompile(`\b(?:along with|together with|zusammen mit|ainsi que|de même que)\b`)

// unsaidValue is the words of a message asking a change (masked[from:]
// on) that give a device a value with no word saying to set it ("Set Q1
// to 105 A; Q2 98 A", "…, Q2: 98 A", "… and Q2 98 A"): left out, that
// change would be one the operator believes was asked. A clause stating
// what is ("(Q1 92 A now)") is no request. "" when there is none.
func unsaidValue(masked string, clauses []clause, from int) string {
	for _, c := range clauses {
		if c.toks[len(c.toks)-1].end <= from || slices.ContainsFunc(c.toks, func(t token) bool {
			return copulas[t.w] || stateWords[t.w] || statedWords[t.w] || madeVerbs[t.w] // "make Q1 105 A" says it
		}) {
			continue
		}
		for k, t := range c.toks {
			if t.start < from || !startsNumber(t.w) {
				continue
			}
			// The device before the value: in the clause, or the clause
			// before a colon ("Q2: 98 A"); a code (letters and digits) or a
			// letter ("Q 2"), never a marker ("to 105 A").
			var prev token
			switch {
			case k > 0:
				prev = c.toks[k-1]
			case strings.HasSuffix(strings.TrimRight(masked[:t.start], " \t"), ":"):
				before := strings.TrimRight(masked[:t.start], " \t:")
				if i := strings.LastIndexAny(before, " \t,;(\n"); before != "" {
					prev = token{w: strings.ToLower(before[i+1:]), start: i + 1, end: len(before)}
				}
			}
			if prev.end <= from || startsNumber(prev.w) || !strings.ContainsFunc(prev.w, unicode.IsDigit) && utf8.RuneCountInString(prev.w) > 1 ||
				clockLike(masked, t) || !numberToken(masked, t) {
				continue
			}
			_, unit, ok := ParseQuantity(masked[t.start:])
			if !ok || unit == "" || timeWords[strings.ToLower(unit)] || len(statedIdentifiers(masked[prev.start:prev.end])) == 0 {
				continue
			}
			return strings.TrimSpace(masked[prev.start:t.end]) + masked[t.end:c.toks[min(k+valueWidth(c.toks, k, unit), len(c.toks))-1].end]
		}
	}
	return ""
}

// heldBack returns what a message msg that states changes (masked, its
// clauses, from masked[from:] on) asks for instead, when its other words hold them back:
// advice about them, a target named by way of another device or left
// open, two states or two values for one thing, a correction or a
// withdrawal.
func heldBack(msg, masked, norm string, clauses []clause, changes []RequestedChange, from int) (Finding, bool) {
	if adviceAfterChange.MatchString(norm) {
		return Finding{Intent: Intent{Kind: KindHypothetical}, Reason: ReasonHypothetical}, true
	}
	if m := hedge.FindStringSubmatch(norm[sentenceStart(norm, from):sentenceEnd(norm, from)]); m != nil {
		return readWithNote(ReasonCorrected, "Your message doubts its change (\""+m[1]+"\"), so nothing will be changed: "+
			"when you are sure, ask for it, for example \"set Q1 to 105 A\".")
	}
	if m := groupedAfterContinental.FindStringSubmatch(norm[from:]); m != nil {
		return readWithNote(ReasonOpenValue, noteGrouped(m[1]))
	}
	if secondValue.MatchString(norm[from:]) || len(changes) > 1 && slices.ContainsFunc(changes, func(c RequestedChange) bool { return c.Target == "" }) &&
		!sequencePattern.MatchString(norm[from:]) {
		return readWithNote(ReasonOpenValue, noteTwoValues)
	}
	if words := unsaidValue(masked, clauses, from); words != "" {
		return readWithNote(ReasonOpenValue, "Your message gives a device a value (\""+words+"\") without a word that says to set it, so nothing will be changed: "+
			"say each change, for example \"set Q1 to 105 A and Q2 to 98 A\".")
	}
	if words := unnamedLater(changes); words != "" {
		return readWithNote(ReasonOpenValue, "Your message gives a value to something it names by no device (\""+words+"\"), so nothing will be changed: "+
			"name each device to change with its value, for example \"set Q1 to 105 A and Q2 to 98 A\".")
	}
	if m := modelPlace.FindStringSubmatch(norm); m != nil {
		return readWithNote(ReasonHypothetical, "Your message asks for the change \""+m[1]+"\", not on the machine, so nothing will be changed.")
	}
	if m := alternativeAfter.FindStringSubmatch(norm[from:]); m != nil {
		return readWithNote(ReasonOpenValue, "Your message gives its setting another value as a choice (\""+strings.TrimSpace(m[1])+"\"), so nothing will be changed: "+
			"ask for the one value you want, for example \"set Q1 to 105 A\".")
	}
	if m := outcomeAfterValue.FindStringSubmatch(norm[from:]); m != nil {
		return readWithNote(ReasonHistory, "Your message tells how the change went (\""+m[1]+"\"), so nothing will be changed: "+
			"to make the change, ask for it, for example \"set Q1 to 105 A\".")
	}
	if words := byOtherDevice(changes); words != "" {
		return readWithNote(ReasonByOtherDevice, "Your change names its target by way of another device (\""+words+"\"), so nothing will be changed: "+
			"which device is meant would be a guess. Name each device to change, for example \"set Q1 to 105 A\".")
	}
	if words := excludedAfter(masked, norm, changes, from); words != "" {
		return readWithNote(ReasonByOtherDevice, "Your message sets a device apart from its change (\""+words+"\") that the change names or would stand for, "+
			"so nothing will be changed: name each device to change, for example \"set Q1 to 105 A\".")
	}
	if words := spelledName(masked, changes); words != "" {
		return readWithNote(ReasonOpenValue, "Your change names its device with a number in words or in small print, or without its number (\""+words+"\"), which the rules do not read as a name, "+
			"so nothing will be changed: write its number in digits, for example \"set Q1 to 105 A\".")
	}
	if words := deviceRange(changes); words != "" {
		return readWithNote(ReasonOpenValue, "Your change names a range of devices by its ends (\""+words+"\"), so nothing will be changed: "+
			"name each device to change, for example \"set Q1, Q2 and Q3 to 105 A\".")
	}
	if words := targetLeftOpen(changes); words != "" {
		return readWithNote(ReasonOpenValue, "Your change leaves open which device to change (\""+words+"\"), so nothing will be changed: "+
			"name the one to change, for example \"set Q1 to 105 A\".")
	}
	var after []clause // the clauses from the change on
	if i := slices.IndexFunc(clauses, func(c clause) bool { return c.toks[0].start >= from }); i >= 0 {
		after = clauses[i:]
	}
	if twoStates(after, changes) {
		return readWithNote(ReasonOpenValue, "Your message asks to switch the same thing both off and on, so nothing will be changed: "+
			"ask for one state at a time, for example \"turn off RF cavity 2\".")
	}
	// Read in the words as typed: "per" starts a reported source ("per the
	// logbook"), so masking blanks "per minute".
	relative := slices.ContainsFunc(changes, func(c RequestedChange) bool { return c.By != nil })
	if relative && otherBaseline.MatchString(norm[from:]) {
		return readWithNote(ReasonOpenValue, "Your message gives its amount from another value than the setting's own now (\"from 92 A\", \"compared to Q2\"), "+
			"so nothing will be changed: ask for the value to reach, for example \"set Q1 to 97 A\", or for the amount alone, \"raise Q1 by 5 A\".")
	}
	if relative {
		if q := otherQuantity(msg, changes); q != "" {
			return readWithNote(ReasonOpenValue, "Your message gives both an amount and another value (\""+q+"\"), which agree only at one reading, "+
				"so nothing will be changed: ask for the value to reach, for example \"set Q1 to 105 A\", or for the amount alone, \"raise Q1 by 5 A\".")
		}
	}
	if relative && repeatedAmount.MatchString(strings.ToLower(msg[from:])) {
		return readWithNote(ReasonOpenValue, "Your message asks for its amount more than once or as a rate (\"twice\", \"another\", \"per minute\"), "+
			"so nothing will be changed: ask for one step, for example \"raise Q1 by 5 A\", or for the value to reach.")
	}
	if severalTargets(changes) && sharedValue.MatchString(norm[from:]) {
		return readWithNote(ReasonOpenValue, "Your message gives several settings one value together (\"in total\", \"combined\"), so nothing will be changed: "+
			"ask for each one's value, for example \"set Q1 to 52.5 A and Q2 to 52.5 A\".")
	}
	if twoValues(changes) && !sequencePattern.MatchString(norm[from:]) {
		return readWithNote(ReasonOpenValue, noteTwoValues)
	}
	struck := "" // struck-through words correct what they stand in
	if strings.Contains(msg, "~~") {
		struck = "~~"
	}
	if words := cmp.Or(struck, corrects(masked[from:]), withdrawn(masked, from, after)); words != "" {
		return readWithNote(ReasonCorrected, "Your message corrects or takes back its change (\""+words+"\"), so nothing will be changed: "+
			"ask for the change once, with the value you want, for example \"set Q1 to 105 A\".")
	}
	return Finding{}, false
}

// readWithNote is heldBack's verdict: no change, for reason, with note
// telling the user what was understood and how to ask.
func readWithNote(reason, note string) (Finding, bool) {
	return Finding{Intent: Intent{Kind: KindRead, Note: note}, Reason: reason}, true
}

// noteTwoValues is the note for one setting given two values.
const noteTwoValues = "Your message gives the same setting two values, so nothing will be changed: " +
	"ask for the one value you want, for example \"set Q1 to 105 A\"."

// hedge: words in a change's sentence that doubt it ("Set Q1 maybe to
// 105 A", "Setze Q1 vielleicht auf 105 A", "…, I think", "Mets Q1
// peut-être à 105 A", "… 🤔").
// hedgeOpeners are the hedge's words that may open a request ("Maybe set
// Q1 to 105 A").
var hedgeOpeners = wordSet(`maybe perhaps possibly probably vielleicht eventuell evtl möglicherweise peut-être éventuellement`)

var hedge = mustFilter(`(?:^|[^\pL])(maybe|perhaps|possibly|probably|i think|i guess|i suppose|i believe|not sure|🤔|🤨|😕|🫤|vielleicht|eventuell|evtl|` +
	`möglicherweise|wahrscheinlich|ich glaube|ich denke|ich vermute|peut-être|éventuellement|probablement|je crois|je pense|je suppose)(?:[^\pL]|$)`)

// outcomeAfterValue: an outcome right after a change's value ("set Q1 to
// 105 A failed", "… timed out", "… didn't work", "… schlug fehl", "… a
// échoué"): the words report a change, they do not ask for one.
var outcomeAfterValue = mustFilter(`\d(?:\s*[a-zµ°%]+)?\s*(?:[,;:—–-]\s*)?(?:\b|[^\pL])(failed|fails|has failed|timed out|times out|didn't work|did not work|doesn't work|does not work|` +
	`worked|succeeded|returned|errored|threw|crashed|hangs|hung|gave (?:an? )?error|ended with|is stuck|got stuck|was rejected|was refused|` +
	`was (?:the|my|our|your|his|her|their|what|sent|executed|issued|done|entered|typed|applied|logged)|were (?:sent|executed|issued|done|applied)|` +
	`war (?:keine|eine|ein|der|die|das|falsch|richtig|gut|schlecht)|était (?:une|un|la|le|faux|fausse|correct|correcte|bien|mal)|a été (?:une|un|la|le|refusé|rejeté|envoyé|exécuté)|` +
	`schlug fehl|ist fehlgeschlagen|hat nicht funktioniert|funktioniert nicht|ging nicht|hat geklappt|klappt nicht|` +
	`a échoué|échoue|n'a pas marché|ne marche pas|n'a pas fonctionné|a marché|a fonctionné)(?:[^\pL]|$)`)

// sharedValue: one value for several settings together ("Q1 and Q2 to
// 105 A in total", "… combined", "insgesamt", "au total").
var sharedValue = mustFilter(`\b(?:in total|total|combined|together|altogether|summed|in sum|insgesamt|zusammen|in summe|au total|ensemble|en tout)\b`)

// severalTargets reports a change whose target names more than one
// device, or more than one change.
func severalTargets(changes []RequestedChange) bool {
	return len(changes) > 1 || len(changes) == 1 && (len(distinctNames(changes[0].Target)) > 1 || namesSeveral(strings.Fields(strings.ToLower(changes[0].Target))))
}

// otherBaseline: a relative change's amount from another value than the
// reading the gate takes ("raise Q1 by 5 A from 92 A", "…, compared to
// Q2", "von 92 A um 5 A", "par rapport à Q2").
var otherBaseline = mustFilter(`(?:^|[^\pL])à partir de [-+]?\d|\b(?:(?:from|von|depuis) [-+]?\d|compared (?:to|with)|relative to|in comparison (?:to|with)|` +
	`verglichen mit|im vergleich zu|gegenüber|par rapport à|comparé à)`)

// otherQuantity returns a quantity in a message with a relative change
// that is neither an amount nor the value of another of its changes
// ("Raise Q1 by 5 A — 138 A", "Q1 is at 135 A, raise it by 5 A", "…, not
// 138 A", "… making it 138 A"): the gate adds the amount to whatever the
// setting reads, which agrees with that value at one reading only. A
// quantity is a number with a unit capgraph knows that is no duration, or
// a bare number after a value word ("to 138").
func otherQuantity(msg string, changes []RequestedChange) string {
	known := func(v float64, unit string) bool {
		return slices.ContainsFunc(changes, func(c RequestedChange) bool {
			return c.By != nil && math.Abs(*c.By) == math.Abs(v) && (c.Unit == unit || unit == "") ||
				c.Value != nil && *c.Value == v && (c.Unit == unit || unit == "")
		})
	}
	// The words as typed: a value in a quotation or an aside counts too.
	for _, cl := range scan(msg) {
		for k, t := range cl.toks {
			if !startsNumber(t.w) || !numberToken(msg, t) || clockLike(msg, t) {
				continue
			}
			v, unit, ok := ParseQuantity(msg[t.start:])
			if !ok {
				continue
			}
			if u, _ := lookupUnit(unit); unit == "" && (k == 0 || !toMarkers[cl.toks[k-1].w]) || u.dim == "s" || timeWords[nextWord(cl.toks, k)] {
				continue
			}
			if !known(v, unit) {
				return strings.TrimSpace(msg[t.start:t.end] + " " + map[bool]string{true: unit}[unit != "" && !strings.ContainsFunc(t.w, unicode.IsLetter)])
			}
		}
	}
	return ""
}

// nextWord is the word after toks[k], or "".
func nextWord(toks []token, k int) string {
	if k+1 < len(toks) {
		return toks[k+1].w
	}
	return ""
}

// timeWords after a number make it a duration or a time, not a value
// ("… over 10 minutes").
var timeWords = wordSet(`s sec secs second seconds min mins minute minutes h hr hrs hour hours ms minuten stunde stunden sekunden seconde secondes heure heures`)

// repeatedAmount: words after a relative change that ask for its amount
// more than once or as a rate ("raise Q1 by 5 A twice", "…, then by
// another 5 A", "by 5 A per minute", "by 5 A/min", "in steps"): the one
// step the rules would permit is not what was asked.
var repeatedAmount = mustFilterEach(
	`\b(?:two|three|four|five|several|multiple|many|a few|a couple of|\d+) times\b|\bat a time\b`,
	`\b(?:twice|thrice|again|another|once more|repeatedly|in steps|step by step|additional|further|extra|zweimal|dreimal|mehrmals|mehrfach|(?:zwei|drei) mal|nochmal|noch einmal|erneut|weitere[nmr]?|zusätzliche[n]?|`+
		`deux fois|trois fois|plusieurs fois|encore|de nouveau|supplémentaires?|de plus)\b`,
	`(?:^|[^\pL])à nouveau\b`,
	`\b(?:per|each|every|pro|jede|par|chaque) (?:s|sec|second|seconds|min|minute|minutes|h|hour|hours|step|sekunde|minute|stunde|schritt|seconde|heure|pas)\b`,
	`[a-zµ%]\s*/\s*(?:s|sec|min|h)\b`,
	`\b(?:then|dann|puis) (?:by |um |de |another |a further |weitere |encore )?[+\d]`,
)

// sequencePattern: words that order two changes of one setting ("set Q1
// to 105 A, then set Q1 to 110 A").
var sequencePattern = mustFilter(`\b(?:then|after that|afterwards|next|finally|dann|danach|anschließend|zuletzt|puis|ensuite|après ça|enfin)\b`)

// twoValues reports two absolute changes of a target named by the same
// numbered names, to different values ("Set Q1 to 140 A\nSet Q1 to
// 105 A"). Changes are grouped by their names, so a long message of
// changes costs one pass.
func twoValues(cs []RequestedChange) bool {
	if len(cs) < 2 {
		return false
	}
	first := map[string]RequestedChange{}
	for _, c := range cs {
		ids := statedIdentifiers(c.Target)
		if c.Value == nil || len(ids) == 0 {
			continue
		}
		names := make([]string, len(ids))
		for k, id := range ids {
			names[k] = id.key()
		}
		slices.Sort(names)
		key := strings.Join(slices.Compact(names), " ")
		if a, ok := first[key]; !ok {
			first[key] = c
		} else if !sameQuantity(*a.Value, a.Unit, *c.Value, c.Unit) {
			return true
		}
	}
	return false
}

// choiceWords in a target leave the device to change open ("Q1 or Q2",
// "cavity 2 and maybe 3", "entweder Q1 oder Q2").
var choiceWords = wordSet(`or and/or either maybe perhaps possibly oder entweder vielleicht eventuell ou soit peut-être`)

// targetLeftOpen returns a change's target from a choiceWords word on,
// when more words follow it, or "".
func targetLeftOpen(cs []RequestedChange) string { return targetFrom(cs, choiceWords) }

// excludedAfter returns words after a change's target that set a device
// apart ("… except Q2", "…, not Q2", "…, leave Q2", "…, Q2 excluded")
// when the device is one a target names ("Set Q1 and Q2 to 105 A except
// Q2") or a target names none ("Set all quadrupoles to 105 A except Q2":
// the only device named would stand for it), or "".
func excludedAfter(masked, norm string, cs []RequestedChange, from int) string {
	if !exclusionWords.MatchString(norm) {
		return "" // most changes: no word that sets anything apart
	}
	var named []string
	unnamed := false
	end := from
	for _, c := range cs {
		ns := distinctNames(c.Target)
		named = append(named, ns...)
		unnamed = unnamed || len(ns) == 0
		if i := strings.Index(masked[end:], c.Target); i >= 0 {
			end += i + len(c.Target)
		}
	}
	for _, c := range scan(masked[end:]) {
		for k, t := range c.toks {
			if !deviceCode(t.w) {
				continue
			}
			n := distinctNames(t.w)
			if len(n) == 0 || !unnamed && !slices.Contains(named, n[0]) {
				continue
			}
			before := c.toks[max(0, k-3):k]
			if slices.ContainsFunc(before, func(b token) bool { return exclusionBefore[b.w] }) ||
				k+1 < len(c.toks) && exclusionAfter[c.toks[k+1].w] {
				return span(masked[end:], c.toks[max(0, k-3):min(len(c.toks), k+2)])
			}
		}
	}
	return ""
}

// exclusionBefore and exclusionAfter set the device they stand by apart
// from a change; exclusionWords finds any of them in a message at the
// cost of a scan.
var (
	exclusionWords  = mustFilter(`(?:^|[^\pL])(?:` + wordAlternation(exclusionBefore, exclusionAfter) + `)(?:$|[^\pL])`)
	exclusionBefore = wordSet(`except excepting excluding excl without w/o not but minus save skip skipping leave leaving keep keeping ignore ignoring
		außer ausser ausgenommen ohne nicht bis lass lasse behalte sauf excepté hormis sans pas laisse garde`)
	exclusionAfter = wordSet(`excluded excepted stays remains untouched unchanged no not ausgenommen nicht bleibt exclu excepté reste`)
)

// wordAlternation is a regexp alternation of the words of sets, longest
// first.
func wordAlternation(sets ...map[string]bool) string {
	var ws []string
	for _, set := range sets {
		for w := range set {
			if q := regexp.QuoteMeta(w); !slices.Contains(ws, q) {
				ws = append(ws, q)
			}
		}
	}
	slices.SortFunc(ws, func(a, b string) int { return cmp.Or(len(b)-len(a), strings.Compare(a, b)) })
	return strings.Join(ws, "|")
}

// spelledName returns the words of a change's target that give a device
// its number in words ("quadrupole number one", "quad one") or in small
// print ("Q¹", "Q₁"), or its letter without a number ("Q"), or "": read as
// no name at all, such a target would permit any device its words
// describe.
func spelledName(masked string, cs []RequestedChange) string {
	for _, c := range cs {
		if strings.ContainsAny(c.Target, "0123456789") || len(statedIdentifiers(c.Target)) > 0 {
			continue // a device numbered in digits (the cheap test first: most are)
		}
		if i := strings.Index(masked, c.Target); i >= 0 && c.Target != "" {
			if r, _ := utf8.DecodeRuneInString(masked[i+len(c.Target):]); unicode.Is(unicode.No, r) {
				return c.Target + string(r) // "Q¹": the scan leaves the small digit out
			}
		}
		ws := strings.FieldsFunc(strings.ToLower(c.Target), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.Is(unicode.No, r) })
		for k, w := range ws {
			if strings.ContainsFunc(w, func(r rune) bool { return unicode.Is(unicode.No, r) }) {
				return c.Target
			}
			// "quadrupole number one", "quad one", "Q one"; not "that one",
			// "the two magnets".
			if nameNumberWords[w] && k > 0 && (numberNouns[ws[k-1]] || len(ws[k-1]) == 1) {
				return c.Target
			}
			// "Set Q to 105 A": a device's letter without its number (not a
			// plane: "the x corrector", "the H steerer").
			if len(w) == 1 && w[0] >= 'b' && w[0] <= 'z' && !strings.Contains("ixyzhv", w) {
				return c.Target
			}
		}
	}
	return ""
}

// numberNouns come before a device's number ("number one", "quad one").
var numberNouns = wordSet(`number no nr num nummer numéro numero quad quads quadrupole quadrupoles quadrupol quadrupôle quadrupôles magnet magnets cavity cavities
	correctors steerers klystrons dipoles sextupoles kickers valves pumps
	corrector steerer klystron sector bpm dipole sextupole kicker septum valve pump line kavität kavitaet cavité aimant`)

// nameNumberWords are numbers in words that may name a device.
var nameNumberWords = wordSet(`one two three four five six seven eight nine ten eleven twelve
	eins zwei drei vier fünf sechs sieben acht neun zehn elf zwölf
	un deux trois quatre cinq six sept huit neuf dix onze douze`)

// deviceRange returns a range of devices a change's target names by its
// ends ("Q1-Q3", "Q1 through Q3", "Q1 to Q3", "Q1 bis Q3", "Q1 à Q3",
// "Q1..Q3"), or "": the devices between are named by no word, so the gate
// would permit the ends and refuse the rest, half a change.
func deviceRange(cs []RequestedChange) string {
	for _, c := range cs {
		for _, m := range rangeOfCodes.FindAllStringSubmatch(c.Target, -1) {
			from, _ := strconv.Atoi(m[2])
			to, _ := strconv.Atoi(m[4])
			if m[3] == "" && from < to || m[3] != "" && strings.EqualFold(m[1], m[3]) {
				// "QF3-1" (no letters before its second number, not rising)
				// names one device.
				return strings.Trim(m[0], " ,;:()")
			}
		}
	}
	return ""
}

// rangeOfCodes is two device codes, or a code and a number, joined by a
// word or a sign of a range.
var rangeOfCodes = regexp.MustCompile(`(?i)(?:^|[^\pL\d])(\pL{1,4})(\d+)\s*(?:-|–|—|\.\.\.?|…|\s(?:through|thru|to|until|till|bis|à|a|jusqu'à)\s)\s*(\pL{1,4})?(\d+)(?:$|[^\pL\d])`)

// twoStates reports whether the clauses cs, changes and what follows them, ask
// for both states of one thing: two on/off changes of targets that agree
// (or name nothing: "disable cavity 2 and switch it on"), or an on/off
// change followed by a clause that is the other particle alone ("…, then
// on").
func twoStates(cs []clause, changes []RequestedChange) bool {
	if !slices.ContainsFunc(changes, func(c RequestedChange) bool { return c.State != "" }) {
		return false
	}
	for i, a := range changes {
		for _, b := range changes[i+1:] {
			if a.State == "" || b.State == "" || a.State == b.State {
				continue
			}
			if len(statedIdentifiers(a.Target)) == 0 || len(statedIdentifiers(b.Target)) == 0 || sameTarget(a, b.Target) {
				return true
			}
		}
	}
	for k := 1; k < len(cs); k++ {
		var rest []string
		for _, t := range cs[k].toks {
			if !sequenceWords[t.w] && !againWords[t.w] {
				rest = append(rest, t.w)
			}
		}
		if len(rest) != 1 || particleStates[rest[0]] == "" {
			continue
		}
		if slices.ContainsFunc(changes, func(c RequestedChange) bool { return c.State != "" && c.State != particleStates[rest[0]] }) {
			return true
		}
	}
	return false
}

// againWords may come with a particle that switches back ("…, then on
// again").
var againWords = wordSet(`again back wieder zurück encore`)

// isLater reports whether a message stating a change (from masked[from:]
// on) asks for it on a condition or for later.
func isLater(masked, norm string, clauses []clause, from int) bool {
	return laterPattern.MatchString(soonest.Replace(norm)) || onCondition(clauses) ||
		laterNear.MatchString(soonest.Replace(norm[sentenceStart(masked, from):]))
}

var laterFinding = Finding{Reason: ReasonLater, Intent: Intent{Kind: KindRead,
	Note: "Your change depends on a condition or a time (\"if…\", \"when…\", \"at 14:00\"), which I cannot wait for, so nothing will be changed now. " +
		"Ask for the change when it should happen, for example \"set Q1 to 105 A\"."}}

func hasAbsolute(cs []RequestedChange) bool {
	return slices.ContainsFunc(cs, func(c RequestedChange) bool { return c.Value != nil })
}

func shorten(s string) string {
	if r := []rune(s); len(r) > 80 {
		return string(r[:80]) + "…"
	}
	return s
}

// negatedChange: a negation followed within five words by a change word
// ("don't change anything", "without changing", "no changes", "do not
// touch", "ne change rien"), or a change word followed within three words
// by a negation ("change nothing", "setze Q1 nicht auf…"), in one clause.
func negatedChange(clauses []clause) bool {
	dangling := false // the clause before ended in a negation: "Do not, under any circumstances, set…"
	for _, c := range clauses {
		if dangling && slices.ContainsFunc(c.toks, func(t token) bool { return changeWords[t.w] || verbOf(t.w) != "" }) {
			return true
		}
		if n := len(c.toks); n > 0 && danglingNegations[c.toks[n-1].w] {
			dangling = true
		}
		for i, t := range c.toks {
			if changeWords[t.w] || verbOf(t.w) != "" {
				// "change nothing", "setze Q1 nicht auf…", "ne change rien";
				// before the value, however long the target: "set the BTS
				// Q1 quadrupole current not to…", "setze … keinesfalls auf…".
				for j := i + 1; j < len(c.toks); j++ {
					if afterNegations[c.toks[j].w] && (j <= i+3 || j+1 < len(c.toks) && toMarkers[c.toks[j+1].w]) {
						return true
					}
				}
			}
			if !negationWords[t.w] && !(t.w == "do" && i+1 < len(c.toks) && c.toks[i+1].w == "not") && !strings.HasPrefix(t.w, "n'") {
				continue
			}
			if i+1 < len(c.toks) && (c.toks[i+1].w == "forget" || c.toks[i+1].w == "vergiss") {
				continue // "don't forget to set…" asks for it
			}
			for j := i + 1; j < len(c.toks) && j <= i+5; j++ {
				if changeWords[c.toks[j].w] || amountVerbs[c.toks[j].w] != 0 && slices.ContainsFunc(c.toks[j+1:min(j+4, len(c.toks))], func(t token) bool { return startsNumber(t.w) }) {
					return true
				}
			}
		}
	}
	return false
}

// frenchPronouns end a French imperative ("règle-le", "mets-la").
var frenchPronouns = []string{"-le", "-la", "-les", "-lui", "-leur", "-moi"}

// gluedPronoun is the object pronoun a French imperative ends with
// ("règle-le", "mets-la"), as a token of its own; none for "-moi" ("règle-moi
// Q1 à 105 A": the object follows).
func gluedPronoun(t token) token {
	for _, p := range frenchPronouns {
		if p != "-moi" && strings.HasSuffix(t.w, p) && len(t.w) > len(p) {
			return token{w: p[1:], start: t.end - len(p) + 1, end: t.end}
		}
	}
	return token{}
}

// verbOf returns the change verb a word is, typos of the English ones
// tolerated, or "".
func verbOf(w string) string {
	for _, p := range frenchPronouns {
		if v, ok := strings.CutSuffix(w, p); ok && valueVerbs[v] {
			return v
		}
	}
	if valueVerbs[w] || toggleVerbs[w] || particleVerbs[w] || zeroVerbs[w] || amountVerbs[w] != 0 {
		return w
	}
	if v, ok := knownTypos[w]; ok {
		return v
	}
	if notVerbs[w] || len(w) < 5 {
		return ""
	}
	for _, v := range typoTolerantInOrder {
		if nearWord(w, v) {
			return v
		}
	}
	return ""
}

// nearWord reports an edit distance of exactly one (a letter added, dropped,
// changed, or two neighbours swapped), excluding inflections ("changes").
func nearWord(w, v string) bool {
	if rest, ok := strings.CutPrefix(w, v); ok {
		switch rest {
		case "", "s", "d", "ed", "es", "r":
			return false
		}
	}
	return oneEdit(w, v)
}

// oneEdit reports whether a and b (bytes) are exactly one edit apart in
// typo.Distance's sense — one insertion, deletion, substitution or swap of
// two neighbours — in one pass, without the distance's table: verbOf asks
// it of every longer word of a message against every typo-tolerant verb.
func oneEdit(a, b string) bool {
	if len(a) < len(b) {
		a, b = b, a
	}
	i := 0
	for i < len(b) && a[i] == b[i] {
		i++
	}
	switch len(a) - len(b) {
	case 0:
		if i == len(a) {
			return false // equal
		}
		if a[i+1:] == b[i+1:] {
			return true // a substitution
		}
		return i+1 < len(a) && a[i] == b[i+1] && a[i+1] == b[i] && a[i+2:] == b[i+2:]
	case 1:
		return a[i+1:] == b[i:] // a deletion from a
	}
	return false
}

// writeVerbs without a value take a note ("… and write it down"), no
// change of the machine.
var writeVerbs = wordSet(`write schreib schreibe schreiben écris écrivez écrire ecris ecrivez ecrire`)

// amountAsked reports the words after an amount verb that read no amount
// but name a device ("add it to Q2", "remove that from Q2"): a change
// asked without its amount, not a read such as "add Q2 to the plot".
func amountAsked(msg string, rest []token) bool {
	return len(statedIdentifiers(span(msg, rest))) > 0 && !presentation(rest) &&
		!slices.ContainsFunc(rest, func(t token) bool { return startsNumber(t.w) && numberToken(msg, t) })
}

// gerundVerb is the change verb an -ing form is ("setting" set, "raising"
// raise, "lowering" lower), or "".
func gerundVerb(w string) string {
	stem, ok := strings.CutSuffix(w, "ing")
	if !ok || len(stem) < 2 {
		return ""
	}
	if v := verbOf(stem); v != "" {
		return v // "lowering"
	}
	if v := verbOf(stem + "e"); v != "" {
		return v // "raising"
	}
	if stem[len(stem)-1] == stem[len(stem)-2] {
		return verbOf(stem[:len(stem)-1]) // "setting"
	}
	return ""
}

// politeOpeners come before an imperative: "can you", "I want you to",
// "kannst du", "peux-tu".
var politeOpeners = [][]string{
	{"would", "you", "mind"}, {"do", "you", "mind"}, // a gerund follows ("would you mind setting…")
	{"i'd", "appreciate", "it", "if", "you", "could"}, {"id", "appreciate", "it", "if", "you", "could"},
	{"i", "would", "appreciate", "it", "if", "you", "could"}, {"it's", "time", "to"}, {"its", "time", "to"}, {"it", "is", "time", "to"}, {"time", "to"},
	{"can", "you"}, {"could", "you"}, {"would", "you"}, {"will", "you"}, {"can", "u"}, {"could", "u"}, {"would", "u"},
	{"i", "want", "you", "to"}, {"i", "need", "you", "to"}, {"i'd", "like", "you", "to"}, {"i", "would", "like", "you", "to"},
	{"id", "like", "you", "to"}, {"i", "want", "to"}, {"i'd", "like", "to"}, {"id", "like", "to"}, {"i", "would", "like", "to"},
	{"i", "need", "to"}, {"we", "need", "to"}, {"we", "want", "to"}, {"let's"}, {"lets"}, {"let", "us"},
	{"don't", "forget", "to"}, {"dont", "forget", "to"}, {"do", "not", "forget", "to"}, {"remember", "to"}, {"make", "sure", "to"},
	// German: the verb then comes at the end ("kannst du Q1 auf 105 A setzen").
	{"kannst", "du"}, {"könntest", "du"}, {"koenntest", "du"}, {"können", "sie"}, {"koennen", "sie"}, {"könnten", "sie"},
	{"koennten", "sie"}, {"würdest", "du"}, {"wuerdest", "du"}, {"würden", "sie"}, {"wuerden", "sie"}, {"ich", "möchte"},
	{"ich", "moechte"}, {"ich", "will"}, {"ich", "hätte", "gern"}, {"wir", "möchten"}, {"vergiss", "nicht"},
	// French: an infinitive follows ("peux-tu mettre Q1 à 105 A").
	{"peux-tu"}, {"pouvez-vous"}, {"pourrais-tu"}, {"pourriez-vous"}, {"veuillez"}, {"merci", "de"}, {"merci", "d'"},
	{"je", "veux", "que", "tu"}, {"je", "voudrais", "que", "tu"}, {"je", "voudrais", "que", "vous"}, {"je", "veux"},
	{"je", "voudrais"}, {"est-ce", "que", "tu", "peux"}, {"est-ce", "que", "vous", "pouvez"}, {"tu", "peux"}, {"vous", "pouvez"},
	{"n'oublie", "pas", "de"}, {"n'oubliez", "pas", "de"}, {"fais"}, {"faites"}, {"il", "faut"},
}

// questionKind says how a clause is a question.
type questionKind int

const (
	notQuestion    questionKind = iota
	firmQuestion                // starts with a question word: "is Q1 above 100 A?"
	markedQuestion              // only ends with "?": "Q1 to 105 A?"
)

// clauseReading is what the rules read in one clause.
type clauseReading struct {
	changes  []RequestedChange
	change   bool // a change request with a usable value
	verb     bool // a change verb in imperative position, whatever followed
	question questionKind
	history  bool   // a change verb as a noun or in a clause about the past
	verbless bool   // neither a change verb nor a read verb
	lastVerb string // the last change verb that read a change
	missed   string // the words of a change verb that read none ("raise Q2" in "set Q1 to 105 A and raise Q2")
}

// readClause classifies one clause. A change verb counts at the start of
// the clause (after fillers and a polite opener) or after "and"/"then"/
// "please", and only in a clause that is not a question: "can you set…" is
// a request, "is Q1 set to…" a question. A request ending in "?" that is
// not polite ("set Q1 to 105 A?") is uncertain and counts as no change.
func readClause(msg string, c clause) clauseReading {
	ws := c.toks
	i := 0
	for i < len(ws) && (fillers[ws[i].w] || hedgeOpeners[ws[i].w]) {
		i++ // "maybe set Q1 to 105 A" is a change the hedge then holds back, with a note
	}
	polite, gerund := false, false
	start := i
	for _, p := range politeOpeners {
		if hasPrefixWords(ws[i:], p) {
			polite, gerund = true, p[len(p)-1] == "mind"
			start = i + len(p)
			for start < len(ws) && (ws[start].w == "please" || ws[start].w == "pls" || ws[start].w == "kindly" || ws[start].w == "just" ||
				ws[start].w == "bitte" || ws[start].w == "mal" || ws[start].w == "doch") {
				start++
			}
			break
		}
	}
	var r clauseReading
	if i < len(ws) && questionWords[ws[i].w] && !polite {
		r.question = firmQuestion
		return r
	}
	positions := []int{start}
	for k := start + 1; k < len(ws); k++ {
		switch ws[k-1].w {
		case "and", "then", "please", "pls", "also", "und", "dann", "bitte", "et", "puis", "ensuite":
			positions = append(positions, k)
		}
	}
	hist := historyPattern.MatchString(strings.ToLower(span(msg, ws)))
	r.verbless = true
	for n, p := range positions {
		if p >= len(ws) {
			continue
		}
		v := verbOf(ws[p].w)
		if v == "" && gerund && n == 0 {
			v = gerundVerb(ws[p].w) // "would you mind setting Q1 to 105 A"
		}
		if v == "" {
			if readVerbs[ws[p].w] {
				r.verbless = false
			}
			continue
		}
		r.verbless = false
		// "dial in 105 A on Q1": a verb with its particle before a value,
		// not a noun ("drop in Q1").
		dialIn := v == "dial" && p+2 < len(ws) && ws[p+1].w == "in" && startsNumber(ws[p+2].w)
		if p+1 < len(ws) && nounFollowers[ws[p+1].w] && !dialIn || hist {
			r.history = true
			continue
		}
		end := len(ws)
		for _, q := range positions[n+1:] {
			if q < len(ws) && (verbOf(ws[q].w) != "" || readVerbs[ws[q].w]) {
				end = q - 1 // drop the "and" before it
				break
			}
		}
		rest := ws[p+1 : max(end, p+1)]
		if dialIn {
			rest = rest[1:]
		}
		if pr := gluedPronoun(ws[p]); pr.w != "" {
			rest = append([]token{pr}, rest...) // "mets-le à 106 A": "le" is the target, named before
		}
		cs, ok := verbChanges(msg, v, rest)
		if !ok && (weakVerbs[v] || amountVerbs[v] != 0 && !amountAsked(msg, rest)) {
			continue // "send me the Q1 plot", "update the logbook": a read
		}
		r.verb = true
		if ok {
			r.changes = append(r.changes, cs...)
			r.change, r.lastVerb = true, v
		} else if r.missed == "" && !presentation(rest) && !writeVerbs[v] {
			r.missed = span(msg, ws[p:max(end, p+1)])
		}
	}
	// German puts the infinitive last: "(bitte) Q1 auf 105 A setzen (bitte)".
	if !r.verb && !r.history {
		last := len(ws) - 1
		for last > start && (fillers[ws[last].w] || ws[last].w == "danke") {
			last--
		}
		// "zu setzen" depends on another clause ("Hör auf, Q1 auf 105 A zu
		// setzen", "Es ist verboten, …"): no request of its own.
		if last > start && germanInfinitives[ws[last].w] && ws[last-1].w != "zu" && (polite || !germanSubjects[ws[start].w]) {
			r.verbless = false
			if hist {
				r.history = true
			} else {
				r.verb = true
				if cs, ok := verbChanges(msg, ws[last].w, ws[start:last]); ok {
					r.changes, r.change = cs, true
				}
			}
		}
	}
	if c.question && !polite && (r.change || r.verb || r.verbless) {
		// "set Q1 to 105 A?": uncertain; "Q1 above 100 A?": a question.
		r.question, r.change, r.changes = markedQuestion, false, nil
	}
	return r
}

func hasPrefixWords(ws []token, p []string) bool {
	if len(ws) < len(p) {
		return false
	}
	for k, w := range p {
		if ws[k].w != w {
			return false
		}
	}
	return true
}

// verbChanges reads what a change verb changes from the words after it.
func verbChanges(msg, verb string, rest []token) ([]RequestedChange, bool) {
	if toggleVerbs[verb] {
		target := trimJoiners(rest)
		state := "on"
		if offVerbs[verb] {
			state = "off"
		}
		if slices.ContainsFunc(target, func(t token) bool { return particleStates[t.w] != "" && particleStates[t.w] != state }) {
			return nil, false // "enable it, then off": which state is meant?
		}
		return []RequestedChange{{Target: span(msg, target), State: state}}, len(target) > 0
	}
	if amountVerbs[verb] != 0 {
		if rc, ok := amountFirst(msg, verb, rest); ok {
			return []RequestedChange{rc}, true
		}
		if !weakVerbs[verb] {
			return nil, false // "add Q2 to the plot"
		}
	}
	if zeroVerbs[verb] {
		target := trimJoiners(rest)
		if len(target) == 0 || KnownUnit(target[0].w) || slices.ContainsFunc(target, func(t token) bool {
			return toMarkers[t.w] || byMarkers[t.w] || copulas[t.w] || statedWords[t.w] || particleStates[t.w] != ""
		}) {
			return nil, false // "zero Q1 to 5 A", "zero crossing is at 3 ms": no zero asked
		}
		zero := 0.0
		return []RequestedChange{{Target: span(msg, target), Value: &zero}}, true
	}
	if stateSetVerbs[verb] {
		if rc, ok := setToState(msg, rest); ok {
			return []RequestedChange{rc}, true
		}
	}
	if weakVerbs[verb] {
		rest = withoutAt(rest)
	}
	// "Turn off cavity 2 and Q1 to 105 A": a switch's state with a value
	// under one verb is neither a value for "off cavity 2 and Q1" nor a
	// state for "cavity 2 and Q1 to 105 A".
	switched := particleVerbs[verb] && slices.ContainsFunc(rest, func(t token) bool { return particleStates[t.w] != "" })
	if switched && slices.ContainsFunc(rest, func(t token) bool { return toMarkers[t.w] || byMarkers[t.w] }) {
		return nil, false
	}
	if cs, ok := valueChanges(msg, verb, rest); ok {
		if weakVerbs[verb] && slices.ContainsFunc(cs, func(c RequestedChange) bool {
			ws := strings.Fields(strings.ToLower(c.Target))
			return len(ws) > 0 && indefinite[ws[0]] || slices.ContainsFunc(ws, func(w string) bool { return copulas[w] || stateWords[w] })
		}) {
			// "push a notification to 105 A" names no device; "make Q1
			// stay at 105 A" keeps it, as "keep Q1 at 105 A" does.
			return nil, false
		}
		return cs, true
	}
	if rc, ok := valueFirst(msg, rest); ok {
		return []RequestedChange{rc}, true
	}
	if madeVerbs[verb] {
		if rc, ok := madeValue(msg, rest); ok {
			return []RequestedChange{rc}, true
		}
	}
	if particleVerbs[verb] {
		for k, t := range rest {
			if k > 6 {
				break
			}
			state := particleStates[t.w]
			if verb == "power" || verb == "shut" {
				state = cmp.Or(state, powerParticles[t.w]) // "power down klystron 3", "shut down…", "power up…"
			}
			if state == "" || verb == "shut" && state == "on" {
				continue
			}
			others := slices.Delete(slices.Clone(rest), k, k+1)
			if slices.ContainsFunc(others, func(t token) bool {
				other := particleStates[t.w]
				if verb == "power" || verb == "shut" {
					other = cmp.Or(other, powerParticles[t.w]) // before the joiners are trimmed: "power up Q1 and then down"
				}
				return other != "" && other != state
			}) {
				return nil, false // "turn it off and on again": two states
			}
			target := trimJoiners(others)
			return []RequestedChange{{Target: span(msg, target), State: state}}, len(target) > 0
		}
	}
	return nil, false
}

// switchMixed says what a clause asks under one switching verb besides one
// state ("Turn off cavity 2 and Q1 to 105 A": "to switch something and to
// set a value"; "Turn cavity 2 off and cavity 3 on": "for two states"),
// or "".
func switchMixed(text string) string {
	states := map[string]bool{}
	value := false
	for _, c := range scan(text) {
		for k, t := range c.toks {
			if st := particleStates[t.w]; st != "" && t.w != "an" { // "an": German on, English article
				states[st] = true
			}
			if (toMarkers[t.w] || byMarkers[t.w]) && k+1 < len(c.toks) && startsNumber(c.toks[k+1].w) {
				value = true
			}
		}
	}
	switch {
	case len(states) > 0 && value:
		return "to switch something and to set a value"
	case len(states) > 1:
		return twoStatesAsked
	}
	return ""
}

const twoStatesAsked = "for two states"

// stateApart is the clause of a message of value changes that ends with a
// state no change asks for ("Set Q1 to 105 A and cavity 2 off": was
// cavity 2 to be switched off?), or "": read alone, the message would set
// Q1 and leave the operator believing cavity 2 was switched too.
func stateApart(masked string, clauses []clause, changes []RequestedChange) string {
	if slices.ContainsFunc(changes, func(rc RequestedChange) bool { return rc.State != "" }) {
		return ""
	}
	for _, c := range clauses {
		end := len(c.toks)
		for end > 0 && endsRequest(c.toks[end-1].w) {
			end--
		}
		if end < 2 || !apartStates[c.toks[end-1].w] {
			continue
		}
		if slices.ContainsFunc(c.toks, func(t token) bool {
			return copulas[t.w] || statedWords[t.w] || readVerbs[t.w] || negationWords[t.w]
		}) {
			continue // "… and cavity 2 is off", "… and check cavity 2 on"
		}
		return span(masked, c.toks[:end])
	}
	return ""
}

// apartStates are the particle states that end a clause only as a state
// ("… Q2 off"); "an", "ein" and "ab" end German verbs as well ("stelle …
// ein", "zieh … ab").
var apartStates = wordSet(`on off aus`)

// stateSetVerbs take an on/off last as their value ("set cavity 2 to off",
// "set the pump on").
var stateSetVerbs = wordSet(`set put`)

// setToState reads "set cavity 2 (to) off": the target, and the state the
// clause's last word names (a polite word may follow). A state word
// elsewhere ("set a flag on Q1") is a preposition, not a value.
func setToState(msg string, rest []token) (RequestedChange, bool) {
	end := len(rest)
	for end > 0 && endsRequest(rest[end-1].w) {
		end--
	}
	if end < 2 {
		return RequestedChange{}, false
	}
	state := rest[end-1].w
	if state != "on" && state != "off" {
		return RequestedChange{}, false
	}
	target := rest[:end-1]
	if target[len(target)-1].w == "to" {
		target = target[:len(target)-1]
	}
	target = trimJoiners(target)
	if len(target) == 0 || slices.ContainsFunc(target, func(t token) bool { return particleStates[t.w] != "" || toMarkers[t.w] || byMarkers[t.w] }) {
		return RequestedChange{}, false // "set cavity 2 off and on", "set Q1 to 5 off"
	}
	return RequestedChange{Target: span(msg, target), State: state}, true
}

// endsRequest reports a word that may end a request after its value ("…
// off please", "… 105, thanks"): a filler, or thanks.
func endsRequest(w string) bool { return fillers[w] || thanksWords[w] }

var thanksWords = wordSet(`thanks thx danke merci`)

// direction is the sign a verb and its particles give an amount: +1, -1,
// or 0 when they do not say.
func direction(verb string, rest []token) float64 {
	switch {
	case upVerbs[verb]:
		return 1
	case downVerbs[verb]:
		return -1
	}
	for _, t := range rest {
		switch {
		case upWords[t.w]:
			return 1
		case downWords[t.w]:
			return -1
		}
	}
	return 0
}

// valueChanges reads "<target> to <value> [and <target> to <value>]…" and
// "<target> by <amount>" (a relative change, signed by the verb: "raise Q1
// by 5 A" is +5, "lower it by 2 %" is -2 %), in the three languages.
func valueChanges(msg, verb string, rest []token) ([]RequestedChange, bool) {
	return signedValueChanges(msg, verb, direction(verb, rest), rest)
}

// signedValueChanges is valueChanges with an amount's sign given: a
// verbless clause continuing a change takes the sign of the change's verb
// ("Raise Q1 by 5 A, Q2 by 3 A").
func signedValueChanges(msg, verb string, dir float64, rest []token) ([]RequestedChange, bool) {
	var out []RequestedChange
	from := 0
	for k := 0; k < len(rest)-1; k++ {
		m := rest[k].w
		isTo, isBy := toMarkers[m], byMarkers[m]
		if !isTo && !isBy || ilYA(rest, k) {
			continue
		}
		v, unit, ok := ParseQuantity(msg[rest[k+1].start:])
		if !ok || !startsNumber(rest[k+1].w) || clockLike(msg, rest[k+1]) || !numberToken(msg, rest[k+1]) {
			continue
		}
		if isBy && fromMarkers[m] && laterValue(msg, rest[k+2:]) {
			continue // "de 100 A à 105 A": from, not by
		}
		used := valueWidth(rest, k+1, unit)
		if opensValue(rest, k+1, used) {
			return nil, false // which value is meant would be a guess
		}
		// A bound, an estimate or an amount ("~105 A", "5 A above nominal",
		// "to +5 A", "by up to 5 A") is no value to set.
		bounded := boundedValue(msg, rest[k+1], rest[k+used].end) && !(isBy && ownBaseline.MatchString(lead(msg[rest[k+used].end:], 64))) ||
			isTo && (boundsAmount(rest[from:k]) || strings.HasPrefix(rest[k+1].w, "+"))
		target := rest[from:k]
		// "from 92 A to 105 A": the old value is not part of the target.
		for f := len(target) - 1; f >= 0; f-- {
			if fromMarkers[target[f].w] && f+1 < len(target) && startsNumber(target[f+1].w) {
				target = target[:f]
				break
			}
		}
		if (len(out) > 0 || verb == "") && alternativeValue(target) || verb == "" && boundOnly(target) {
			return nil, false // "…, ideally to 110 A", "…, up to 110 A": which value is meant would be a guess
		}
		if (len(out) > 0 || verb == "") && excludedValue(target) {
			// A value the user rules out ("…, not to 110 A", "…, nicht auf
			// 110 A", "…, pas à 110 A") is no change: skipped, it is
			// permitted nowhere.
			from = k + 1 + used
			k = from - 1
			continue
		}
		if len(out) > 0 && len(trimJoiners(target)) == 0 && !slices.ContainsFunc(target, func(t token) bool { return sequenceWords[t.w] }) {
			// Words about the change just read, not another one: "to 105 A
			// at 2 A/s", "… = 5 A more" ("… then to 140 A" is a second).
			from = k + 1 + used
			k = from - 1
			continue
		}
		if bounded || unknownUnitAfter(msg, rest[k+used].end, unit) || signAfter.MatchString(lead(msg[rest[k+used].end:], 64)) || unit == "" && splitNumber.MatchString(msg[rest[k+1].end:]) ||
			strings.ContainsAny(msg[rest[k].end:rest[k+1].start], "-+−") {
			return nil, false // "105,,5 A", "105, 5 A": which number, in which unit? "to − 105 A": which sign?
		}
		target = trimJoiners(target)
		if len(out) == 0 && verb != "" && len(target) > 0 && copulas[target[len(target)-1].w] {
			return nil, false // "Set Q1 is at 98 A": what Q1 is, or a change? A guess either way
		}
		if (len(out) > 0 || verb == "") && (statesWhatIs(target) || slices.ContainsFunc(untilJoiner(rest[min(k+1+used, len(rest)):]), func(t token) bool {
			return copulas[t.w] || statedWords[t.w] // "…; Q2 at 98 A is fine"
		})) {
			// After a change, or without a verb of its own ("…, it's at
			// 92 A now", "(Q2 is at 98 A)"): what is, not a change.
			from = k + 1 + used
			k = from - 1
			continue
		}
		if presentation(target) || presentation(untilJoiner(rest[min(k+1+used, len(rest)):])) {
			return nil, false // "set the range to 2 hours", "set Q1 to 105 A in the plot"
		}
		rc := RequestedChange{Target: span(msg, target), Unit: unit}
		if isTo {
			rc.Value, rc.Direction = &v, int(dir)
		} else {
			signed := strings.ContainsAny(rest[k+1].w[:1], "+-")
			switch {
			case signed && dir == 0:
			case !signed && dir != 0:
				v *= dir
			case signed && dir != 0 && (v < 0) == (dir < 0):
			default:
				// No direction ("change Q1 by 5 A"), or one the sign
				// contradicts ("raise Q1 by -5 A"): unclear.
				from = k + 1 + used
				k = from - 1
				continue
			}
			rc.By = &v
		}
		out = append(out, rc)
		from = k + 1 + used
		k = from - 1
	}
	return out, len(out) > 0
}

// signAfter: words right after a value that give it a sign of their own
// ("2 A negative", "2 A in the opposite direction", "2 A, reversed
// polarity"): which sign the number has would be a guess.
var signAfter = regexp.MustCompile(`(?i)^\s*[,(]?\s*(?:negative|positive|neg|pos|negativ|positiv|négatif|négative|positif|` +
	`in (?:the )?(?:negative|positive|opposite|other|reverse|reversed) (?:direction|sense|polarity)|` +
	`(?:with |in )?(?:reversed|reverse|opposite|inverted|negative|positive|swapped) polarity|umgepolt|(?:mit )?umgekehrter polarität|` +
	`(?:en |avec )?polarité (?:inversée|opposée|négative))(?:[^\pL]|$)`)

// ownBaseline: after an amount, words that add it to the setting's value
// now, as every amount is ("raise Q1 by 5 A from its current value", "…
// above where it is"); "above nominal" stays another baseline.
var ownBaseline = regexp.MustCompile(`(?i)^\s*(?:from|above|over|relative to|on top of)\s+(?:(?:its|the|their)\s+(?:current|present|actual)\s+(?:value|setting|setpoint|reading|level)|where (?:it|they) (?:is|are)(?:\s+now)?|here|now)\s*(?:[.,;!)]|$)`)

// splitNumber: after a number without a unit, a break and another number
// ("105,,5 A", "105, 5 A", "105. 5 A"): one value broken in two, or two.
var splitNumber = regexp.MustCompile(`^\s*[,;.]+\s*[-+−]?\d`)

// ilYA reports the "a" of the French "il y a" (ago: "d'il y a 3
// heures") at toks[k]: a time, not a value marker.
func ilYA(toks []token, k int) bool {
	return toks[k].w == "a" && k >= 2 && toks[k-1].w == "y" && (toks[k-2].w == "il" || toks[k-2].w == "d'il")
}

// excludedValue reports words between a change and a further value that
// rule the value out: a negation, with joiners and emphasis around it
// ("but not", "and certainly not", "aber nicht", "mais pas").
func excludedValue(between []token) bool {
	negated := false
	for _, t := range between {
		switch {
		case afterNegations[t.w] || t.w == "no":
			negated = true
		case leadingJoiners[t.w] || trailingJoiners[t.w] || exclusionFillers[t.w]:
		default:
			return false
		}
	}
	return negated
}

// alternativeValue reports words between a change and a further value
// that make the value another choice or a bound for the same setting
// ("…, ideally to 110 A", "…, otherwise to 110 A", "…, sonst auf 110 A",
// "…, voire à 110 A", "…, up to 110 A"), not a change of its own.
func alternativeValue(between []token) bool {
	alternative := false
	for _, t := range between {
		switch {
		case alternativeWords[t.w]:
			alternative = true
		case leadingJoiners[t.w] || trailingJoiners[t.w] || exclusionFillers[t.w] || t.w == "at" || t.w == "that":
		default:
			return false
		}
	}
	return alternative
}

// boundOnly reports a verbless value after a change that only "up" or
// "down" comes before ("…, up to 110 A"): a bound, not a change.
func boundOnly(between []token) bool {
	return len(between) > 0 && len(trimJoiners(between)) == 0 && (upWords[between[len(between)-1].w] || downWords[between[len(between)-1].w])
}

// alternativeAfter: a further value after a break that a word makes
// another choice for the same setting ("…, ideally to 110 A", "…, or
// at worst 110 A", "…, sonst auf 110 A", "…, voire à 110 A", "…, up to
// 110 A").
var alternativeAfter = mustFilter(`[,;:(—–-]\s*((?:(?:but|or|and|oder|aber|und|ou|mais|et|at|if|not)\s+)*` +
	`(?:ideally|preferably|otherwise|alternatively|else|even|rather|instead|at best|at worst|failing that|up|down|` +
	`besser|lieber|eher|sonst|andernfalls|alternativ|idealerweise|vorzugsweise|höchstens|` +
	`sinon|voire|plutôt|idéalement|préférablement|autrement))\s*,?\s*(?:to|at|auf|à|a|sur)?\s*[-+]?\d`)

// secondValue: a value right after a change's value that restates or
// replaces it ("105 A (or 110 A)", "105 A, i.e. 110 A", "105 A → 110 A",
// "105 A, bzw. 110 A", "105 A, c'est-à-dire 110 A", "105 A, 110 A").
var secondValue = mustFilter(`(?:\bto|\bat|=|\bauf|(?:^|[^\pL])à|\bsur)\s*[-+]?\d+(?:[.,]\d+)?(?:\s*[a-zµ°%]+)?\s*(?:[,;]\s+|[(/]\s*|\s+)(?:(?:or|respectively|resp\.?|i\.\s?e\.?|ie|that is|aka|bzw\.?|beziehungsweise|` +
	`d\.\s?h\.?|das heißt|c'est-à-dire|soit|ou|oder)\s*,?\s*)?(?:→|->)?\s*(?:to\s+|auf\s+|à\s+)?[-+]?\d`)

// groupedAfterContinental: a value after a German or French marker whose
// point is followed by three digits ("auf 1.050 A", "à 105.000 mA"): in
// German and French that point groups thousands (1050), in English it is
// a decimal point (1.05). A comma there, or several groups, are read by
// neither (ParseQuantity; groupedNumber finds them for the note).
var (
	groupedAfterContinental = mustFilter(`(?:\bauf|\bum|(?:^|[^\pL])à|\bsur|\bde)\s+[-+]?([1-9]\d{0,2}(?:\.\d{3})+)(?:$|[^\d.,]|[.,](?:$|[^\d]))`)
	groupedNumber           = regexp.MustCompile(`(?:^|[^\d.,])([1-9]\d{0,2}(?:(?:,\d{3})+|(?:\.\d{3}){2,}))(?:$|[^\d.,]|[.,](?:$|[^\d]))`)
)

// noteGrouped is the note for a number whose separator may group
// thousands or mark decimals ("1.050": 1050 or 1.05).
func noteGrouped(number string) string {
	whole := strings.NewReplacer(".", "", ",", "").Replace(number)
	sep := "point"
	if strings.Contains(number, ",") {
		sep = "comma"
	}
	readings := whole + " if the " + sep + " groups thousands"
	if strings.Count(number, ".")+strings.Count(number, ",") == 1 {
		readings += " and " + strings.Replace(number, ",", ".", 1) + " if it marks decimals"
	}
	return "Your message writes \"" + number + "\", which is " + readings + ", so nothing will be changed: " +
		"write the number without a thousands separator and with a point for decimals, for example \"" + whole + "\"."
}

// unnamedLater returns the target of a change after a message's first
// that names no device by a number and is no pronoun or sequence word
// ("…, currently at 140 A", "…, alarm at 140 A", "…, keep at 140 A"):
// such a target would take the message's names, and its value would be
// permitted for the first change's device.
func unnamedLater(changes []RequestedChange) string {
	for _, c := range changes[min(1, len(changes)):] {
		if c.Target == "" || len(distinctNames(c.Target)) > 0 {
			continue
		}
		for _, w := range strings.Fields(strings.ToLower(c.Target)) {
			if !referenceWords[strings.Trim(w, ".,;:")] {
				return c.Target
			}
		}
	}
	return ""
}

// referenceWords may make up a later change's target that refers to an
// earlier one ("then set it to…", "afterwards to…", "dann auf…").
var referenceWords = wordSet(`it them this that then afterwards afterward finally next later and also dann danach anschließend zuletzt
	es ihn sie das puis ensuite enfin le la les`)

// modelPlace: a change asked of a model, a file or a document rather than
// the machine, wherever the words stand ("In the model, set Q1…").
var modelPlace = mustFilter(`\b((?:in|im|dans|into) (?:the |le |la |das |dem |l')?(?:model|lattice|lattice file|config|configuration|snapshot|save set|saveset|` +
	`spreadsheet|database|modell|datei|konfiguration|modèle|fichier))\b`)

// alternativeWords before a further value make it another choice.
var alternativeWords = wordSet(`ideally preferably preferrably otherwise alternatively else even rather instead better best worst optimally
	or failing possibly maybe perhaps
	besser lieber eher sonst andernfalls alternativ idealerweise vorzugsweise notfalls höchstens
	sinon voire plutôt idéalement préférablement autrement éventuellement`)

// exclusionFillers may stand around the negation of an excluded value.
var exclusionFillers = wordSet(`but definitely certainly surely absolutely ever aber sicher keinesfalls mais surtout absolument`)

// numberToken reports whether a token is a number with a known unit or
// none, and nothing else: "105", "105A", "0,105", "1e2"; not "0x69",
// "105.0.1", "105-140", "2nd", nor "#3".
func numberToken(msg string, t token) bool {
	if strings.HasSuffix(strings.TrimRight(msg[:t.start], " "), "#") || strings.HasSuffix(msg[:t.start], "№") {
		return false // "#3": a number that names, not a value
	}
	if t.start > 0 && strings.ContainsRune("+-−", rune(msg[t.start-1])) || strings.HasSuffix(msg[:t.start], "−") {
		return false // "--105", "+-105": two signs, no number
	}
	if r, _ := utf8.DecodeLastRuneInString(msg[:t.start]); unicode.Is(unicode.Pd, r) || strings.ContainsRune("﹣－➖⁻₋", r) {
		return false // "‐2 A", "﹣2 A", "－2 A": a dash or a minus the number does not carry; which sign?
	}
	s := strings.Replace(msg[t.start:t.end], "−", "-", 1)
	m := quantityPattern.FindStringSubmatch(s)
	return m != nil && len(m[0]) == len(s) && (m[2] == "" || KnownUnit(m[2]))
}

// sequenceWords make a value after a change the next change of the same
// target: "set Q1 to 105 A then to 140 A".
var sequenceWords = wordSet(`then and dann und puis ensuite et`)

// valueWidth is how many tokens the value at toks[at] takes: its number,
// and its unit (as ParseQuantity read it) when that is a word of its own
// ("105 A": 2, "105A": 1).
func valueWidth(toks []token, at int, unit string) int {
	if at+1 < len(toks) && KnownUnit(toks[at+1].w) && unit != "" && !strings.ContainsFunc(toks[at].w, unicode.IsLetter) {
		return 2
	}
	return 1
}

// unknownUnitAfter reports a unit capgraph does not know right after a
// value that ends at end (unit is the one ParseQuantity read, "" for
// none): a compound or a power of a known one ("105 A/s", "105 A²",
// "105 A/2", "105 a.u."), a word or sign for another ("105 mTorr",
// "20 °F", "105 ‰", "105 Å", "105 units", "105 Ампер"), an uncertainty
// ("105(1) A"). Dropped, it would leave the number to be read in the
// device's own unit: 20 °F as 20 °C.
func unknownUnitAfter(msg string, end int, unit string) bool {
	s := msg[end:]
	if unit == "deg" && degreeScale(s) == "F" {
		return true // "20 degrees Fahrenheit": a scale capgraph does not convert
	}
	if unit != "" {
		// Past the unit as written, when the value's width left it ("A/s"
		// is one word).
		if waveMeasure.MatchString(s) {
			return true
		}
		s = strings.TrimLeft(strings.TrimLeft(s, " \t\u00a0\u202f\u2009"), "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyzµμΩ°%")
		r, _ := utf8.DecodeRuneInString(s)
		if (r == '.' || r == ',') && len(s) > 1 && s[1] >= '0' && s[1] <= '9' {
			return true // "105 A.5": the number goes on after its unit (105.5 A?)
		}
		return strings.ContainsRune("/·⋅∙²³^⁻", r) || strings.HasPrefix(s, ".u") ||
			strings.HasPrefix(s, " squared") || strings.HasPrefix(s, " cubed") || waveMeasure.MatchString(s)
	}
	if strings.HasPrefix(s, "(") && len(s) > 1 && s[1] >= '0' && s[1] <= '9' {
		return true // "105(1) A"
	}
	s = strings.TrimLeft(s, " \t\u00a0\u202f\u2009")
	r, _ := utf8.DecodeRuneInString(s)
	switch {
	case strings.ContainsRune("‰‱°℃℉′″", r):
		return true
	case !unicode.IsLetter(r):
		return false
	case !unicode.Is(unicode.Latin, r):
		return true // another script's word: "Ампер", "安培"
	}
	word := s
	if i := strings.IndexFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && r != '.' }); i >= 0 {
		word = s[:i]
	}
	word = strings.TrimRight(word, ".")
	if l := strings.ToLower(word); (l == "per" || l == "pour") && percentAfter.MatchString(s[len(word):]) {
		return true // "10 per cent", "10 pour cent": a percentage in two words
	}
	if l := strings.ToLower(word); strings.HasSuffix(l, "pp") || strings.HasSuffix(l, "rms") || strings.HasSuffix(l, "pk") {
		return true // "610 kVpp", "5 Vrms": a measure of a wave, not the device's number
	}
	return utf8.RuneCountInString(word) == 1 || unitWords[strings.ToLower(word)] || unitLike(strings.ToLower(word)) || stutteredUnit(word) ||
		waveMeasure.MatchString(s[len(word):])
}

// stutteredUnit reports a known unit typed with its last letter twice
// ("AA", "kVV", "uAA", "mbarr"): read without it, "500 uAA" would be 500
// in the device's own unit, a million times more than asked.
func stutteredUnit(w string) bool {
	r := []rune(w)
	n := len(r)
	return n >= 2 && r[n-1] == r[n-2] && !KnownUnit(w) && KnownUnit(string(r[:n-1]))
}

// percentAfter: "cent" after "per" or "pour", a percentage in two words.
var percentAfter = regexp.MustCompile(`^\s+(?i:cents?)\b`)

// waveMeasure: words after a value naming which measure of a wave it is
// ("610 kV peak", "5 A rms", "2 V p-p"): the device's number is one of
// them, and which would be a guess.
var waveMeasure = regexp.MustCompile(`(?i)^\s*(?:pp|p-p|rms|peak|pk|peak-to-peak|amplitude|spitze|spitzenwert|effektiv|crête|efficace)\b`)

// unitWords are units capgraph does not convert, and words for a unit of
// the device's own ("counts"): the number is not the value in any unit it
// knows.
var unitWords = wordSet(`units unit counts count cts arb arbitrary au a.u lsb lsbs dac adc bits bit ticks steps rpm
	mtorr utorr ntorr psi psig atm ppm ppb db dbm fahrenheit coulomb gy sv msv usv kg mol lux sccm slm ml inch inches ft feet
	mils pc amperio amperios amper ампер einheiten einheit schritte unités unité degre degres grados grado gradi`)

// alternatives join a value to another one it leaves open: "105 or 140 A",
// "Q1 and Q2 to 105 A and 98 A", "100 bis 105 A", "105 ou 110 A".
var alternatives = wordSet(`or and to oder und bis ou et à`)

// opensValue reports whether the value at rest[at], used tokens with its
// unit, is followed by another value it leaves open: an alternative, a
// second number ("105 A 140 A", "1 05 A", "105±2 A").
func opensValue(rest []token, at, used int) bool {
	n := at + used
	return n < len(rest) && (startsNumber(rest[n].w) || n+1 < len(rest) && alternatives[rest[n].w] && startsNumber(rest[n+1].w))
}

// Signs and words that make a value a bound or an estimate ("~105 A",
// "< 105 A", "105 A or so", "105 A max", "105 A, roughly"): boundBefore
// (a function, since a pattern anchored at the end scans the whole text
// before) and boundAfter.
var (
	boundAfter = regexp.MustCompile(`^(?:\s*\S*-ish\b|` +
		`[\s,;:(\[—–%‰-]*(?:minimum|maximum|max|min|tops|maxi|mini|maximal|minimal)\s*(?:[.!,;)\]]|$)|` +
		`[\s,;:(\[—–%‰-]*(?:or so|or thereabouts|give or take|more or less|roughly|approx\w*|circa|ca|ish|` +
		`at (?:most|least|the most)|or (?:less|more|lower|higher|below|above|under|over|so|whatever|something|similar|anything)|` +
		`ungefähr|ungefaehr|etwa|zirka|mindestens|höchstens|hoechstens|oder (?:so|weniger|mehr|darunter|darüber|drunter|drüber)|` +
		`environ|à peu près|au (?:moins|plus|maximum|minimum)|ou (?:moins|plus|quelque chose|autre chose|n'importe)|plus ou moins|grosso modo)\b|` +
		// … or an amount against another value: "5 A above nominal", "5 A
		// more", "105 A + offset", "2 x 52.5 A", "50 % of 210 A".
		`[\s,;:(\[—–%‰-]*(?:above|below|beyond|more|less|fewer|higher|lower|extra|offset|relative|than|plus|minus|times|of|` +
		`(?:over|under) (?:its|the|what|nominal|current|present)|from (?:the |its )?(?:nominal|current|present|now|here|where)|` +
		`über|unter|mehr|weniger|höher|tiefer|niedriger|oberhalb|unterhalb|relativ|zusätzlich|` +
		`de plus|de moins|au-dessus|au-dessous|en dessous|en plus|en moins|relatif|fois)\b|` +
		`\s*(?:[+×*]|x\s*\d))`)
)

// boundedValue reports whether the value whose number is t and which
// ends at end is a bound or an estimate rather than a value (boundBefore,
// boundAfter), or shows more than it reads: a superscript, a fraction or
// a "+" against its number ("10⁵" reads as 10, "105½" as 105).
func boundedValue(msg string, t token, end int) bool {
	if r, _ := utf8.DecodeRuneInString(msg[t.end:]); unicode.Is(unicode.No, r) || r == '+' {
		return true
	}
	after := lead(msg[end:], 48) // the words right after: a bound is said there ("…, roughly")
	return boundBefore(msg[:t.start]) || boundAfter.MatchString(strings.ToLower(after))
}

// lead is s up to its first n bytes, cut at a rune's start: the words
// right after a value, so that reading them costs no copy of the message.
func lead(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// boundBefore reports a sign or a word ending prefix, the text before a
// value's number, that makes the value a bound or an estimate: "~", "<",
// "≤" ("->" and "=>" are arrows), "ca.", "approx", "circa".
func boundBefore(prefix string) bool {
	p := strings.TrimRight(prefix, " \t\u00a0\u202f")
	r, size := utf8.DecodeLastRuneInString(p)
	if strings.ContainsRune("~≈≃∼<>≤≥⩽⩾≲≳", r) {
		before, _ := utf8.DecodeLastRuneInString(p[:len(p)-size])
		return before != '-' && before != '='
	}
	p = strings.TrimSuffix(p, ".")
	// The last few bytes only: the prefix is the message up to the value.
	if l := strings.ToLower(p[max(0, len(p)-16):]); strings.HasSuffix(l, " to up to") || strings.HasSuffix(l, "close to") || strings.HasSuffix(l, "closer to") || strings.HasSuffix(l, "near to") {
		return true // "to up to 105 A", "close to 105 A"
	}
	word := p[strings.LastIndexFunc(p, func(r rune) bool { return !unicode.IsLetter(r) })+1:]
	switch strings.ToLower(word) {
	case "ca", "approx", "circa", "env":
		return true
	}
	return false
}

// boundsAmount reports whether the words before a to-marker end in a
// by-marker ("raise Q1 by up to 5 A", "lower it by down to 5 A"): the
// value bounds an amount, it is not the value to set.
func boundsAmount(before []token) bool {
	j := len(before) - 1
	for j >= 0 && (upWords[before[j].w] || downWords[before[j].w]) {
		j--
	}
	return j >= 0 && byMarkers[before[j].w]
}

// leavesValueOpen reports whether a clause's change leaves its value open
// (opensValue after a to-marker), or gives a value that is no number
// ("105-140 A", "0x69").
func leavesValueOpen(msg string, toks []token) bool {
	for k := 0; k+1 < len(toks); k++ {
		if !toMarkers[toks[k].w] && !byMarkers[toks[k].w] || !startsNumber(toks[k+1].w) || ilYA(toks, k) {
			continue
		}
		_, unit, _ := ParseQuantity(msg[toks[k+1].start:])
		used := valueWidth(toks, k+1, unit)
		if !numberToken(msg, toks[k+1]) || opensValue(toks, k+1, used) || unknownUnitAfter(msg, toks[k+used].end, unit) || boundedValue(msg, toks[k+1], toks[k+used].end) ||
			toMarkers[toks[k].w] && (boundsAmount(toks[:k]) || strings.HasPrefix(toks[k+1].w, "+")) {
			return true
		}
	}
	return false
}

// hiddenIn reports an invisible character next to a letter or a digit,
// or a text direction control anywhere: what the message shows is then
// not what the rules would read ("1\u200b05" shows as 105). A joiner
// between emoji ("👨‍🔧") shows nothing hidden.
func hiddenIn(msg string) bool {
	prev := rune(0)
	for i, r := range msg {
		switch {
		case bidiControl(r):
			return true
		case zeroWidth(r):
			next, _ := utf8.DecodeRuneInString(msg[i+utf8.RuneLen(r):])
			if wordish(prev) || wordish(next) {
				return true
			}
		}
		prev = r
	}
	return false
}

func bidiControl(r rune) bool {
	return r >= 0x202A && r <= 0x202E || r >= 0x2066 && r <= 0x2069 || r == 0x200E || r == 0x200F || r == 0x061C
}

func zeroWidth(r rune) bool {
	return r >= 0x200B && r <= 0x200D || r == 0x2060 || r == 0xFEFF || r == 0x00AD
}

func wordish(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// dropHidden removes the characters hiddenIn looks for (strings.Map).
func dropHidden(r rune) rune {
	if bidiControl(r) || zeroWidth(r) {
		return -1
	}
	return r
}

// laterValue reports whether a to-marker and a number follow.
func laterValue(msg string, rest []token) bool {
	for k := 0; k+1 < len(rest); k++ {
		if toMarkers[rest[k].w] && startsNumber(rest[k+1].w) && !ilYA(rest, k) {
			return true
		}
	}
	return false
}

// valueFirst reads "<value> to|on|into|for <target>" ("write 105 A to Q1").
func valueFirst(msg string, rest []token) (RequestedChange, bool) {
	if len(rest) < 3 || !startsNumber(rest[0].w) || clockLike(msg, rest[0]) {
		return RequestedChange{}, false
	}
	v, unit, ok := ParseQuantity(msg[rest[0].start:])
	if !ok {
		return RequestedChange{}, false
	}
	k := 1
	if unit != "" && !strings.ContainsFunc(rest[0].w, unicode.IsLetter) {
		k = 2
	}
	if k >= len(rest)-1 || unknownUnitAfter(msg, rest[k-1].end, unit) {
		return RequestedChange{}, false
	}
	switch rest[k].w {
	case "to", "on", "into", "for", "in", "auf", "à", "sur", "dans":
	default:
		return RequestedChange{}, false
	}
	target := trimJoiners(rest[k+1:])
	if len(target) == 0 || presentation(target) {
		return RequestedChange{}, false
	}
	return RequestedChange{Target: span(msg, target), Value: &v, Unit: unit}, true
}

// amountFirst reads an amount verb's "<amount> <link> <target>" ("add
// 5 A to Q1", "take 5 A off of Q1", "retire 2 A de Q1", "zieh 5 A von Q1
// ab"): a change by the amount, signed by the verb. A signed, bounded or
// timed amount, or a target that goes on with a value of its own ("add 5 A
// to Q1 and 3 A to Q2"), is none.
func amountFirst(msg, verb string, rest []token) (RequestedChange, bool) {
	sign := amountVerbs[verb]
	k := 0
	if k+2 >= len(rest) || !startsNumber(rest[k].w) || strings.ContainsAny(rest[k].w[:1], "+-−") || clockLike(msg, rest[k]) || !numberToken(msg, rest[k]) {
		return RequestedChange{}, false
	}
	v, unit, ok := ParseQuantity(msg[rest[k].start:])
	used := valueWidth(rest, k, unit)
	if !ok || k+used >= len(rest) || timeWords[strings.ToLower(unit)] || boundedValue(msg, rest[k], rest[k+used-1].end) ||
		unknownUnitAfter(msg, rest[k+used-1].end, unit) || signAfter.MatchString(lead(msg[rest[k+used-1].end:], 64)) {
		return RequestedChange{}, false
	}
	k += used
	if !amountLinks[sign][rest[k].w] {
		return RequestedChange{}, false
	}
	k++
	if rest[k-1].w == "off" && k < len(rest) && rest[k].w == "of" {
		k++
	}
	target := rest[k:]
	if p := amountParticles[verb]; p != "" {
		if len(target) == 0 || target[len(target)-1].w != p {
			return RequestedChange{}, false // "zieh 5 A von Q1": which verb?
		}
		target = target[:len(target)-1]
	} else if len(target) > 0 && slices.Contains([]string{"ab", "weg"}, target[len(target)-1].w) {
		return RequestedChange{}, false
	}
	for i := 1; i < len(target); i++ {
		if ownBaseline.MatchString(lead(msg[target[i-1].end:], 64)) {
			target = target[:i] // "add 5 A to Q1 from its current value"
			break
		}
	}
	for len(target) > 0 && (fillers[target[len(target)-1].w] || atOnce[target[len(target)-1].w] || trailingJoiners[target[len(target)-1].w] || target[len(target)-1].w == "at") {
		target = target[:len(target)-1] // "… to Q1 now", "… right away"
	}
	target = trimJoiners(target)
	if len(target) == 0 || presentation(target) || statesWhatIs(target) || slices.ContainsFunc(target, func(t token) bool {
		return startsNumber(t.w) && numberToken(msg, t) && !deviceCode(t.w) && !clockLike(msg, t) || copulas[t.w] || statedWords[t.w]
	}) {
		return RequestedChange{}, false
	}
	by := v * sign
	return RequestedChange{Target: span(msg, target), By: &by, Unit: unit}, true
}

// madeValue reads "make <target> <value>" ("make it 106 A", "make Q1
// 105 A", "make that 98 A please"): a value without a marker, last in its
// clause, after a target that states nothing ("make sure Q1 is 105 A" is
// no request to make it so). A duration, a bound or a signed amount is no
// value to set.
func madeValue(msg string, rest []token) (RequestedChange, bool) {
	for len(rest) > 0 && (fillers[rest[len(rest)-1].w] || trailingJoiners[rest[len(rest)-1].w]) {
		rest = rest[:len(rest)-1]
	}
	for k := 1; k < len(rest); k++ {
		t := rest[k]
		if !startsNumber(t.w) || strings.HasPrefix(t.w, "+") || clockLike(msg, t) || !numberToken(msg, t) {
			continue
		}
		v, unit, ok := ParseQuantity(msg[t.start:])
		used := valueWidth(rest, k, unit)
		if !ok || k+used != len(rest) {
			continue
		}
		target := trimJoiners(rest[:k])
		if len(target) == 0 || target[0].w == "sure" || statesWhatIs(target) || presentation(target) || slices.ContainsFunc(target, func(t token) bool {
			return madeNotTarget[t.w] || KnownUnit(t.w) && t.w != "a" // "make Q1 about 105 A", "make Q1 105 A and Q2 98 A"
		}) ||
			timeWords[strings.ToLower(unit)] || boundedValue(msg, t, rest[k+used-1].end) || unknownUnitAfter(msg, rest[k+used-1].end, unit) {
			return RequestedChange{}, false
		}
		return RequestedChange{Target: span(msg, target), Value: &v, Unit: unit}, true
	}
	return RequestedChange{}, false
}

// withoutAt is a weak verb's words with "at" no value marker: "send Bob
// the Q1 value at 105 A", "update to the latest Q1 at 105 A" say where or
// when, not what to set ("update Q1 to 105 A" does).
func withoutAt(ts []token) []token {
	if !slices.ContainsFunc(ts, func(t token) bool { return t.w == "at" }) {
		return ts
	}
	out := slices.Clone(ts)
	for k := range out {
		if out[k].w == "at" {
			out[k].w = "@"
		}
	}
	return out
}

// indefinite articles start a target that is no device ("a notification").
var indefinite = wordSet(`a an some ein eine einen un une des`)

// madeNotTarget are words that make what comes before a value no target
// of "make": an estimate, a second target or value.
var madeNotTarget = wordSet(`about around roughly approximately approx circa ca nearly almost some maybe and then or
	etwa ungefähr circa rund fast und dann oder environ presque à peu près et puis ou`)

func startsNumber(w string) bool {
	w = strings.TrimLeft(w, "+-.")
	return w != "" && w[0] >= '0' && w[0] <= '9'
}

// clockLike: "at 10:30" is a time, not a value.
func clockLike(msg string, t token) bool {
	return strings.Contains(msg[t.start:t.end], ":")
}

// joiners are words around a target that are not part of it ("and",
// "please", a trailing "up" of "ramp Q1 up by 5 A", "back" of "set Q1
// back to 92 A", "Sie" of "setzen Sie Q1 auf…").
var (
	leadingJoiners  = wordSet(`and also then & up down und auch dann bitte sie du mal hoch runter et aussi puis`)
	trailingJoiners = wordSet(`and please from up down back bitte mal doch hoch runter herunter zurück von de s'il te vous plaît stp svp`)
)

// trimJoiners drops joining words around a target.
func trimJoiners(ts []token) []token {
	for len(ts) > 0 && leadingJoiners[ts[0].w] {
		ts = ts[1:]
	}
	for len(ts) > 0 && trailingJoiners[ts[len(ts)-1].w] {
		ts = ts[:len(ts)-1]
	}
	return ts
}

// untilJoiner is the words up to the next "and"/"then" (what qualifies a
// value: "to 105 A in the plot").
func untilJoiner(ts []token) []token {
	for k, t := range ts {
		if t.w == "and" || t.w == "then" || t.w == "und" || t.w == "et" || t.w == "puis" {
			return ts[:k]
		}
	}
	return ts
}

func presentation(ts []token) bool {
	for _, t := range ts {
		if presentationNouns[t.w] {
			return true
		}
		if _, after, ok := strings.Cut(t.w, "-"); ok && presentationNouns[after] {
			return true // "the y-axis"
		}
	}
	return false
}

// span is the original text of a run of tokens.
func span(msg string, ts []token) string {
	if len(ts) == 0 {
		return ""
	}
	return strings.TrimSpace(msg[ts[0].start:ts[len(ts)-1].end])
}
