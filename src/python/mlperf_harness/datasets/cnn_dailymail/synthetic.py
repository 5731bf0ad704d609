"""A generated stand-in for CNN-DailyMail: news-like articles whose summaries can be found in them.

Each article reports one event of a few kinds (a fire, an election, a company's results, a match, a
storm, a court ruling, a research finding, a rail accident) about generated people, places and
organisations, with numbers. It opens with a dateline, as CNN's do, then the event's lead sentence;
its key figure and its outcome come later, between background sentences that say nothing new. The
reference summary restates the lead, the key figure and the outcome, in that order, one per line,
each ending " ." as many CNN-DailyMail highlights do: a small model can learn where they are.

Some names carry non-ASCII letters and some amounts a pound sign, so byte-level BPE and ROUGE's
ASCII-only tokenization see what real articles give them.

Output is deterministic: sample i depends only on (seed, i), so a larger count extends a smaller one.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from mlperf_harness.datasets.cnn_dailymail.samples import INSTRUCTION, SummarySample

FIRST_NAMES = (
    "Anna", "Ben", "Carla", "David", "Elena", "Farid", "Grace", "Hugo", "Irene", "James", "Karin",
    "Luis", "Maria", "Nikhil", "Olivia", "Peter", "Rosa", "Samuel", "Tomás", "Zoë", "Amir", "Chloé",
)  # fmt: skip
LAST_NAMES = (
    "Adams", "Baker", "Chen", "Diaz", "Evans", "Fischer", "García", "Hughes", "Ibrahim", "Jensen",
    "Kowalski", "Lopez", "Müller", "Novak", "Okafor", "Patel", "Quinn", "Rossi", "Schmidt",
    "Tanaka", "Walsh", "Young",
)  # fmt: skip
PLACES = (
    ("Northfield", "England"), ("Port Allen", "Scotland"), ("Riverton", "Wales"),
    ("Lakeside", "Ireland"), ("Greenbay", "Canada"), ("Westmoor", "England"),
    ("Kingsport", "Australia"), ("Eastwick", "New Zealand"), ("Millbrook", "Canada"),
    ("Harbor City", "California"), ("Oakdale", "Texas"), ("Stonebridge", "Ohio"),
    ("Fairview", "Oregon"), ("Bellmont", "Florida"), ("Clearwater", "Georgia"),
    ("Redcliff", "Scotland"), ("Ashford", "England"), ("Silverton", "Colorado"),
)  # fmt: skip
COMPANIES = (
    "Northwind Energy", "Bluestone Bank", "Orion Motors", "Apex Foods", "Helix Pharma",
    "Summit Airlines", "Crescent Media", "Ironwood Steel", "Pioneer Telecom", "Evergreen Retail",
)  # fmt: skip
TEAMS = (
    "City Rovers", "United Stars", "Harbor Kings", "Valley Wolves", "Athletic Club",
    "Rangers", "North End", "Sporting Lions", "Town Eagles", "Park Rangers",
)  # fmt: skip
UNIVERSITIES = (
    "the University of Northfield", "Kingsport University", "the Institute of Marine Studies",
    "Westmoor College", "the National Science Centre",
)  # fmt: skip
FINDINGS = (
    "a new species of frog", "a faster way to recycle plastic", "a link between sleep and memory",
    "an ancient settlement under a car park", "a cheaper battery for electric cars",
)  # fmt: skip
CRIMES = ("fraud", "arson", "robbery", "money laundering", "dangerous driving")
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
QUARTERS = ("first", "second", "third", "fourth")
ROLES = ("a spokesman for", "the head of", "a spokeswoman for", "a manager at")

# Background sentences: they name the event's place, people and numbers but add no key fact.
FILLERS = (
    "{other}, who has lived in {city} for {years} years, said the area had changed a great deal.",
    "Local residents gathered outside the town hall on {day} evening.",
    "Traffic in the centre of {city} was slow for most of the day.",
    "Photos shared online showed crowds near the main square.",
    "{other} said more details would be released later in the week.",
    "The area is home to about {population} people.",
    "Similar cases have been reported in {city2} and {city3} in recent years.",
    "Officials urged people to follow updates from local authorities.",
    "It was the {ordinal} event of its kind in the region this year.",
    "Neighbours described a calm morning before the news spread.",
    "A meeting to discuss the matter is planned for next month.",
    "Schools in {city} stayed open as usual.",
    "The weather in {city} was dry and mild for the time of year.",
    "Reporters from several countries arrived in {city} on {day}.",
    "{other}, a teacher at a local school, said people were talking about little else.",
    "The story was widely shared on social media.",
)  # fmt: skip
ORDINALS = ("second", "third", "fourth", "fifth")


@dataclass(frozen=True)
class _Event:
    """An event's key sentences: the lead, the key figure, the outcome, and one quote."""

    lead: str
    figure: str
    outcome: str
    quote: str


def _name(rng: random.Random) -> str:
    return f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}"


def _count(rng: random.Random, low: int, high: int) -> str:
    return f"{rng.randint(low, high):,}"


def _fire(rng: random.Random, city: str, day: str, person: str) -> _Event:
    homes, people = _count(rng, 3, 40), _count(rng, 20, 300)
    return _Event(
        lead=f"A fire destroyed {homes} homes in {city} on {day}",
        figure=f"Firefighters helped {people} people leave the area",
        outcome=f"Fire chief {person} said the cause of the fire is still unknown",
        quote="We were lucky that nobody was badly hurt",
    )


def _election(rng: random.Random, city: str, day: str, person: str) -> _Event:
    share, votes = rng.randint(51, 74), _count(rng, 2_000, 90_000)
    return _Event(
        lead=f"{person} was elected mayor of {city} on {day}",
        figure=f"{person} won {share} percent of the vote, or {votes} votes",
        outcome=f"{person} will take office next month and promised to build new homes",
        quote="This is a victory for everyone who lives here",
    )


def _results(rng: random.Random, city: str, day: str, person: str) -> _Event:
    company = rng.choice(COMPANIES)
    money = f"£{rng.randint(2, 900)}" if rng.random() < 0.3 else f"${rng.randint(2, 900)}"
    jobs = _count(rng, 100, 5_000)
    return _Event(
        lead=f"{company}, based in {city}, reported a profit of {money} million on {day}",
        figure=f"The profit was for the {rng.choice(QUARTERS)} quarter of the year",
        outcome=f"Chief executive {person} said the company will hire {jobs} workers",
        quote="Our customers have stayed with us through a difficult year",
    )


def _match(rng: random.Random, city: str, day: str, person: str) -> _Event:
    home, away = rng.sample(TEAMS, 2)
    won, lost = rng.randint(2, 6), rng.randint(0, 1)
    crowd = _count(rng, 5_000, 60_000)
    return _Event(
        lead=f"{home} beat {away} {won}-{lost} in {city} on {day}",
        figure=f"A crowd of {crowd} watched the match",
        outcome=f"{person} scored twice and {home} moved to the top of the league",
        quote="The players gave everything from the first minute",
    )


def _storm(rng: random.Random, city: str, day: str, person: str) -> _Event:
    rain, schools = rng.randint(40, 250), _count(rng, 5, 80)
    return _Event(
        lead=f"A storm brought {rain} millimetres of rain to {city} on {day}",
        figure=f"{schools} schools were closed because of flooding",
        outcome=f"Forecaster {person} said more rain is expected next week",
        quote="Please stay away from the river until the water goes down",
    )


def _court(rng: random.Random, city: str, day: str, person: str) -> _Event:
    years, crime = rng.randint(2, 15), rng.choice(CRIMES)
    return _Event(
        lead=f"A court in {city} sentenced {person} to {years} years in prison on {day}",
        figure=f"{person} was found guilty of {crime}",
        outcome=f"Lawyers for {person} said they will appeal the sentence",
        quote="Justice has been done for the victims",
    )


def _research(rng: random.Random, city: str, day: str, person: str) -> _Event:
    university, finding = rng.choice(UNIVERSITIES), rng.choice(FINDINGS)
    months = rng.randint(6, 48)
    return _Event(
        lead=f"Scientists at {university} in {city} said on {day} they had found {finding}",
        figure=f"The team worked on the study for {months} months",
        outcome=f"Professor {person} said the results will be published next year",
        quote="We did not expect to find anything like this",
    )


def _rail(rng: random.Random, city: str, day: str, person: str) -> _Event:
    passengers, injured = _count(rng, 50, 600), rng.randint(2, 40)
    return _Event(
        lead=f"A train carrying {passengers} passengers left the tracks near {city} on {day}",
        figure=f"{injured} people were taken to hospital with minor injuries",
        outcome=f"Rail company boss {person} said the line will reopen on {rng.choice(DAYS)}",
        quote="Our thoughts are with everyone who was on board",
    )


EVENTS: tuple[Callable[[random.Random, str, str, str], _Event], ...] = (
    _fire, _election, _results, _match, _storm, _court, _research, _rail,
)  # fmt: skip


def generate_sample(seed: int, index: int, fillers: tuple[int, int] = (4, 10)) -> SummarySample:
    """Sample `index` of the set of `seed`: one article and its 3-line reference summary."""
    rng = random.Random(f"cnn_dailymail:{seed}:{index}")  # a str seed: stable across runs
    (city, region), (city2, _), (city3, _) = rng.sample(PLACES, 3)
    day, person, other, speaker = rng.choice(DAYS), _name(rng), _name(rng), _name(rng)
    event = rng.choice(EVENTS)(rng, city, day, person)
    values = {
        "city": city,
        "city2": city2,
        "city3": city3,
        "day": day,
        "other": other,
        "years": rng.randint(5, 60),
        "population": f"{rng.randint(5, 900) * 1000:,}",
        "ordinal": rng.choice(ORDINALS),
    }
    background = [
        template.format(**values) for template in rng.sample(FILLERS, rng.randint(*fillers))
    ]
    quote = f'"{event.quote}," said {speaker}, {rng.choice(ROLES)} the local council.'
    # The figure and the outcome go somewhere after the lead, among the background sentences.
    body = [*background, quote]
    figure_at = rng.randint(0, len(body) // 2)
    body.insert(figure_at, event.figure + ".")
    body.insert(rng.randint(figure_at + 1, len(body)), event.outcome + ".")
    article = f"{city.upper()}, {region} (CNN) -- {event.lead}, officials said. " + " ".join(body)
    summary = "\n".join(f"{sentence} ." for sentence in (event.lead, event.figure, event.outcome))
    return SummarySample(instruction=INSTRUCTION, article=article, summary=summary)


def generate_samples(count: int, seed: int = 0) -> list[SummarySample]:
    return [generate_sample(seed, index) for index in range(count)]
