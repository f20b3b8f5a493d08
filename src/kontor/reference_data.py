"""Kontor's reference tables as shipped: chart-of-accounts leaves and currencies.

Loaded by data migrations, so a fresh database always has them. The codes
follow the style of a German standard chart of accounts (SKR03).
"""

from decimal import Decimal

# (code, name, group, VAT rate, keywords that suggest the category)
CATEGORIES = [
    ("3400", "Wareneingang 19 %", "Einkauf", "19", "wholesale goods stock supplier"),
    ("3300", "Wareneingang 7 %", "Einkauf", "7", "food books groceries"),
    ("4100", "Löhne", "Personal", "0", "salary wages payroll"),
    ("4130", "Gesetzliche Sozialaufwendungen", "Personal", "0", "social insurance krankenkasse"),
    ("4210", "Miete", "Raumkosten", "19", "rent office lease"),
    ("4240", "Gas, Strom, Wasser", "Raumkosten", "19", "electricity power gas water stadtwerke"),
    ("4250", "Reinigung", "Raumkosten", "19", "cleaning janitor"),
    ("4260", "Instandhaltung Räume", "Raumkosten", "19", "repair maintenance handyman"),
    ("4360", "Versicherungen", "Versicherungen", "0", "insurance policy premium"),
    ("4380", "Beiträge", "Versicherungen", "0", "membership chamber ihk dues"),
    ("4500", "Fahrzeugkosten", "Fahrzeug", "19", "vehicle car service"),
    ("4530", "Laufende Kfz-Betriebskosten", "Fahrzeug", "19", "fuel petrol diesel tankstelle"),
    ("4570", "Leasing Fahrzeuge", "Fahrzeug", "19", "leasing car lease"),
    ("4600", "Werbekosten", "Vertrieb", "19", "advertising ads marketing"),
    ("4650", "Bewirtungskosten", "Vertrieb", "19", "restaurant dinner catering"),
    ("4654", "Nicht abzugsfähige Bewirtung", "Vertrieb", "19", "bar drinks party"),
    ("4660", "Reisekosten Arbeitnehmer", "Reise", "7", "travel train hotel"),
    ("4663", "Reisekosten Fahrtkosten", "Reise", "19", "taxi flight ticket"),
    ("4666", "Reisekosten Übernachtung", "Reise", "7", "hotel overnight stay"),
    ("4670", "Reisekosten Unternehmer", "Reise", "19", "trip conference owner"),
    ("4806", "Wartung Software und Hardware", "Betrieb", "19", "software maintenance support"),
    ("4855", "Sofortabschreibung GWG", "Betrieb", "19", "laptop monitor small asset"),
    ("4900", "Sonstige betriebliche Aufwendungen", "Betrieb", "19", "misc other"),
    ("4910", "Porto", "Büro", "0", "postage stamps deutsche post"),
    ("4920", "Telefon", "Büro", "19", "phone mobile telekom"),
    ("4925", "Internetkosten", "Büro", "19", "internet broadband hosting"),
    ("4930", "Bürobedarf", "Büro", "19", "office supplies paper toner"),
    ("4940", "Zeitschriften, Bücher", "Büro", "7", "magazine newspaper subscription"),
    ("4945", "Fortbildungskosten", "Büro", "19", "training course seminar"),
    ("4950", "Rechts- und Beratungskosten", "Beratung", "19", "lawyer legal advice"),
    ("4955", "Buchführungskosten", "Beratung", "19", "bookkeeping accountant tax advisor"),
    ("4957", "Abschluss- und Prüfungskosten", "Beratung", "19", "audit annual statement"),
    ("4970", "Nebenkosten des Geldverkehrs", "Finanzen", "0", "bank fee charges account"),
    ("2100", "Zinsen und ähnliche Aufwendungen", "Finanzen", "0", "interest loan"),
    ("8400", "Erlöse 19 %", "Erlöse", "19", "revenue sales invoice customer"),
    ("8300", "Erlöse 7 %", "Erlöse", "7", "revenue reduced rate"),
]

CATEGORY_ROWS = [
    {"code": code, "name": name, "group": group, "vat_rate": Decimal(rate), "keywords": words}
    for code, name, group, rate, words in CATEGORIES
]

CURRENCY_ROWS = [
    {"code": "EUR", "name": "Euro", "rate_to_eur": Decimal("1")},
    {"code": "USD", "name": "US dollar", "rate_to_eur": Decimal("0.92")},
    {"code": "GBP", "name": "Pound sterling", "rate_to_eur": Decimal("1.17")},
    {"code": "CHF", "name": "Swiss franc", "rate_to_eur": Decimal("1.04")},
    {"code": "PLN", "name": "Polish złoty", "rate_to_eur": Decimal("0.23")},
    {"code": "CZK", "name": "Czech koruna", "rate_to_eur": Decimal("0.04")},
    {"code": "DKK", "name": "Danish krone", "rate_to_eur": Decimal("0.134")},
    {"code": "SEK", "name": "Swedish krona", "rate_to_eur": Decimal("0.087")},
]
