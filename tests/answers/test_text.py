"""Statements, units and numbers: what the judges compare."""

from __future__ import annotations

from recallwatch.answers.text import contains, numbers_of, statements, units


def test_numbers_are_read_whatever_their_separators() -> None:
    assert numbers_of("1.166,70 y 2.000 €, el 7 % y 2000") == {"116670", "2000", "7"}
    assert numbers_of("1.772,00 euros") == numbers_of("1772 euros") == {"1772"}
    assert numbers_of("tramo G5, código P01, 14 pagas.") == {"14"}


def test_statements_are_sentences_that_say_something() -> None:
    assert statements("Sí. Hay que retener el 19 %.\nEl modelo es el 115. Vale.") == [
        "Hay que retener el 19 %.", "El modelo es el 115."]
    assert statements("No.") == []


def test_a_table_row_is_read_with_its_header() -> None:
    table = "Tramo\tCuota (€/mes)\nG5\t370\nG6\t390"
    assert units(table) == ["Tramo Cuota (€/mes)", "Tramo Cuota (€/mes) G5 370",
                            "Tramo Cuota (€/mes) G6 390"]
    assert units("Primera frase. Segunda frase.") == ["Primera frase.", "Segunda frase."]


def test_word_for_word_ignores_case_spaces_and_the_full_stop() -> None:
    assert contains("El modelo 190 se presenta  del 1 al 31 de enero.", "se presenta del 1 AL 31")
    assert not contains("El modelo 190", "el modelo 191")
