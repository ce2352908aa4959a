"""A refusal gathers the reasons of the routes that looked at it as values, once each."""

from __future__ import annotations

from cqsens.errors import InputError


def test_reasons_are_added_once_and_rendered_after_the_message() -> None:
    err = InputError("aggregating WITH is not supported", source="q.sql", line=2, column=3,
                     construct="aggregating WITH")
    err.add_reason("it reads customer outside its parts")
    err.add_reason("it would be a released view")
    err.add_reason("it reads customer outside its parts")  # a second route, same reason
    assert err.reasons == ["it reads customer outside its parts", "it would be a released view"]
    assert str(err) == ("q.sql:2:3: aggregating WITH is not supported; it reads customer outside "
                        "its parts; it would be a released view [aggregating WITH]")
    assert err.args == (err.message,)


def test_a_reason_equal_to_the_message_is_not_repeated() -> None:
    err = InputError("EXCEPT is not supported")
    err.add_reason("EXCEPT is not supported")
    assert err.reasons == [] and err.message == "EXCEPT is not supported"
