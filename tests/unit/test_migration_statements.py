"""A migration's text cut into its statements (``grove_db.migrate.statements``), as
``grove migrate`` sends them on a Citus cluster already placed: semicolons end a
statement only outside strings, quoted identifiers, comments and dollar-quoted bodies."""

from __future__ import annotations

import pytest

from grove_db.migrate import statements


def test_semicolons_inside_quotes_comments_and_bodies_end_nothing() -> None:
    text = """
        -- a comment; before anything
        CREATE TABLE "a;b" (x text DEFAULT 'it''s; fine');
        /* a block; /* nested; */ still; */
        CREATE FUNCTION f() RETURNS text LANGUAGE plpgsql AS $fn$
        BEGIN
            RETURN E'\\'; $$';  -- $$ inside another tag's body
        END;
        $fn$;
        DO $$ BEGIN PERFORM 1; END $$;
        SELECT 1  -- the last one needs no semicolon
    """
    assert statements(text) == [
        """-- a comment; before anything
        CREATE TABLE "a;b" (x text DEFAULT 'it''s; fine')""",
        """/* a block; /* nested; */ still; */
        CREATE FUNCTION f() RETURNS text LANGUAGE plpgsql AS $fn$
        BEGIN
            RETURN E'\\'; $$';  -- $$ inside another tag's body
        END;
        $fn$""",
        "DO $$ BEGIN PERFORM 1; END $$",
        "SELECT 1  -- the last one needs no semicolon",
    ]


def test_a_dollar_inside_a_word_opens_no_quote() -> None:
    assert statements("SELECT 1 AS a$b$; SELECT 2") == ["SELECT 1 AS a$b$", "SELECT 2"]


def test_comments_and_blanks_alone_are_no_statement() -> None:
    assert statements("SELECT 1;\n-- done;\n/* really; */\n;  ") == ["SELECT 1"]
    assert statements("") == []


@pytest.mark.parametrize("text", ["DO $$ BEGIN END", "SELECT 1; /* open"])
def test_an_unclosed_quote_or_comment_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="never closed"):
        statements(text)
