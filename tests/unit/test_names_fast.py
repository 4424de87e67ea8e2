"""The shortcut of `visible` and `printable` (text that `str.isprintable` passes is returned
as it is) gives what the character loop gives, for any text."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from qex.core import names

#: Text weighted towards the characters the loops treat specially.
TEXT = st.text(alphabet=st.one_of(
    st.characters(), st.sampled_from("\\\n\r\t\x00\x1b\x7f\x80\x9f\xa0 é\u2028\u200b")))


@given(TEXT)
def test_visible_is_the_loop(text: str) -> None:
    assert names.visible(text) == names._visible_chars(text)


@given(TEXT)
def test_printable_is_the_loop(text: str) -> None:
    assert names.printable(text) == names._printable_chars(text)
