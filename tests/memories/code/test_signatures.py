"""Error signatures (docs/code-memory.md#error-signatures), pure: the last error of a command's output as
each toolchain prints it, the same signature for two runs of one failure (other numbers, paths,
addresses), a different one for a different failure."""

from __future__ import annotations

import pytest

from memories.code.signatures import error_signature, message_normalise

PYTHON = """$ python manage.py migrate
Traceback (most recent call last):
  File "/home/dev/shop/manage.py", line 22, in <module>
    main()
  File "/home/dev/shop/.venv/lib/python3.11/site-packages/django/db/backends/utils.py", line 105, in _execute
    return self.cursor.execute(sql, params)
  File "/home/dev/shop/shop/migrations/0042_orders.py", line 17, in forwards
    Order.objects.create(id=1234, total=99)
django.db.utils.IntegrityError: duplicate key value violates unique constraint "shop_order_pkey"
DETAIL:  Key (id)=(1234) already exists.
"""
PYTEST_SHORT = """============================= test session starts ==============================
collected 3 items

tests/test_cart.py F..                                                   [100%]

=================================== FAILURES ===================================
________________________________ test_checkout _________________________________
tests/test_cart.py:14: in test_checkout
    assert cart.total() == 3
shop/cart.py:9: in total
    return self.sum / self.count
E   ZeroDivisionError: division by zero
=========================== short test summary info ============================
FAILED tests/test_cart.py::test_checkout - ZeroDivisionError: division by zero
========================= 1 failed, 2 passed in 0.12s ==========================
"""
# pytest's default (--tb=long): each frame's source, then its location line; the last one names the type
SEPARATOR = "_ " * 40  # pytest's line between two frames (a space at its end, as a space after a location)
PYTEST_LONG = """=================================== FAILURES ===================================
________________________________ test_checkout _________________________________

    def test_checkout():
        cart = Cart(items=[])
>       assert cart.total() == 3

tests/test_cart.py:14:{SPACE}
{SEPARATOR}

self = <shop.cart.Cart object at 0x7f3a2c1e5d90>

    def total(self):
>       return self.sum / self.count
E       ZeroDivisionError: division by zero

shop/cart.py:9: ZeroDivisionError
=========================== short test summary info ============================
FAILED tests/test_cart.py::test_checkout - ZeroDivisionError: division by zero
============================== 1 failed in 0.05s ===============================
""".format(SPACE=" ", SEPARATOR=SEPARATOR)
PYTEST_ASSERT = """________________________________ test_total ____________________________________

    def test_total():
        cart = Cart(items=[1, 2])
>       assert cart.total() == 4
E       assert 3 == 4
E        +  where 3 = <bound method Cart.total of <shop.cart.Cart object at 0x7f00aa11bb20>>()

tests/test_cart.py:21: AssertionError
=========================== short test summary info ============================
FAILED tests/test_cart.py::test_total - assert 3 == 4
============================== 1 failed in 0.04s ===============================
"""
NODE = """/home/dev/app/src/cart.js:9
    return cart.items.total;
                      ^

TypeError: Cannot read properties of undefined (reading 'total')
    at Cart.total (/home/dev/app/src/cart.js:9:23)
    at checkout (/home/dev/app/src/checkout.js:22:18)
    at Object.<anonymous> (/home/dev/app/index.js:3:1)
    at Module._compile (node:internal/modules/cjs/loader:1554:14)
    at node:internal/main/run_main_module:36:49

Node.js v22.12.0
"""
JEST = """ FAIL  src/cart.test.js
  Cart
    ✕ computes the total (4 ms)

  ● Cart › computes the total

    TypeError: Cannot read properties of undefined (reading 'total')

       7 |   it('computes the total', () => {
       8 |     const cart = makeCart();
    >  9 |     expect(cart.items.total).toBe(3);
         |                       ^
      10 |   });

      at Object.<anonymous> (src/cart.test.js:9:23)

Test Suites: 1 failed, 1 total
Tests:       1 failed, 1 total
"""
JAVA = """Exception in thread "main" java.lang.NullPointerException: \
Cannot invoke "String.length()" because "name" is null
\tat com.acme.Greeter.greet(Greeter.java:12)
\tat com.acme.Main.run(Main.java:30)
\tat com.acme.Main.main(Main.java:5)
"""
JAVA_CAUSED = """[ERROR] testSave(com.acme.RepoTest)  Time elapsed: 0.2 s  <<< ERROR!
org.springframework.dao.DataIntegrityViolationException: could not execute statement
\tat org.springframework.orm.jpa.Translator.translate(Translator.java:276)
\tat com.acme.Repo.save(Repo.java:40)
Caused by: org.postgresql.util.PSQLException: ERROR: duplicate key value violates unique constraint "users_email_key"
\tat org.postgresql.core.v3.QueryExecutorImpl.receiveErrorResponse(QueryExecutorImpl.java:2725)
\tat com.acme.Repo.insert(Repo.java:55)
\t... 12 more
"""
GO_PANIC = """panic: runtime error: index out of range [5] with length 3

goroutine 1 [running]:
main.lookup(...)
\t/home/dev/app/main.go:12
main.main()
\t/home/dev/app/main.go:8 +0x1d
exit status 2
"""
GO_TEST = """=== RUN   TestTotal
    cart_test.go:12: total() = 5, want 3
--- FAIL: TestTotal (0.00s)
FAIL
FAIL\texample.com/shop/cart\t0.003s
FAIL
"""
RUST = """   Compiling shop v0.1.0 (/home/dev/shop)
error[E0382]: borrow of moved value: `items`
 --> src/cart.rs:14:20
  |
12 |     let moved = items;
   |                 ----- value moved here
14 |     println!("{}", items.len());
   |                    ^^^^^ value borrowed here after move

For more information about this error, try `rustc --explain E0382`.
error: could not compile `shop` (bin "shop") due to 1 previous error
"""
RUST_PANIC = """running 1 test
test tests::total ... FAILED

failures:

---- tests::total stdout ----

thread 'tests::total' panicked at src/cart.rs:31:9:
attempt to divide by zero
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace

failures:
    tests::total

test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s
"""


@pytest.mark.parametrize(
    ("output", "type_", "message", "frames"),
    [
        (
            PYTHON,
            "IntegrityError",
            'duplicate key value violates unique constraint "shop_order_pkey"',
            ("0042_orders.py:forwards", "utils.py:_execute", "manage.py:<module>"),
        ),
        (PYTEST_SHORT, "ZeroDivisionError", "division by zero", ("cart.py:total", "test_cart.py:test_checkout")),
        (PYTEST_LONG, "ZeroDivisionError", "division by zero", ("cart.py:total", "test_cart.py:test_checkout")),
        (PYTEST_ASSERT, "AssertionError", "assert <n> == <n>", ("test_cart.py:test_total",)),
        (
            NODE,
            "TypeError",
            "Cannot read properties of undefined (reading 'total')",
            ("cart.js:Cart.total", "checkout.js:checkout", "index.js:Object.<anonymous>"),
        ),
        (
            JEST,
            "TypeError",
            "Cannot read properties of undefined (reading 'total')",
            ("cart.test.js:Object.<anonymous>",),
        ),
        (
            JAVA,
            "NullPointerException",
            'Cannot invoke "String.length()" because "name" is null',
            ("Greeter.java:greet", "Main.java:run", "Main.java:main"),
        ),
        (
            JAVA_CAUSED,
            "PSQLException",
            'ERROR: duplicate key value violates unique constraint "users_email_key"',
            ("QueryExecutorImpl.java:receiveErrorResponse", "Repo.java:insert"),
        ),
        (
            GO_PANIC,
            "panic",
            "runtime error: index out of range [<n>] with length <n>",
            ("main.go:lookup", "main.go:main"),
        ),
        (GO_TEST, "FAIL", "total() = <n>, want <n>", ("cart_test.go:TestTotal",)),
        (RUST, "error[E0382]", "borrow of moved value: `items`", ("cart.rs",)),
        (RUST_PANIC, "panicked", "attempt to divide by zero", ("cart.rs:tests::total",)),
    ],
    ids=[
        "python",
        "pytest-short",
        "pytest-long",
        "pytest-assert",
        "node",
        "jest",
        "java",
        "java-caused-by",
        "go-panic",
        "go-test",
        "rust",
        "rust-panic",
    ],
)
def test_each_toolchains_last_error_is_read_with_its_innermost_frames(output, type_, message, frames):
    signature = error_signature(output)

    assert signature is not None
    assert (signature.type, signature.message, signature.frames) == (type_, message, frames)
    assert type_ in signature.text and len(signature.digest) == 64


def again(output: str) -> str:
    """The same failure on another machine and another day: other directories, line numbers, addresses,
    ids and durations."""
    return (
        output.replace("/home/dev/", "/srv/ci/runner-7/work/")
        .replace(":9:", ":11:")
        .replace("line 17", "line 19")
        .replace("0x7f3a2c1e5d90", "0x7fee01020304")
        .replace("0.12s", "0.31s")
        .replace("(1234)", "(98765)")
        .replace("[5] with length 3", "[7] with length 2")
    )


@pytest.mark.parametrize(
    "output",
    [PYTHON, PYTEST_SHORT, PYTEST_LONG, PYTEST_ASSERT, NODE, JEST, JAVA, JAVA_CAUSED, GO_PANIC, GO_TEST, RUST],
)
def test_two_runs_of_one_failure_have_one_signature(output):
    first, second = error_signature(output), error_signature(again(output))

    assert first is not None and second is not None
    assert first.digest == second.digest


def test_a_temporary_path_and_a_uuid_in_the_message_do_not_split_one_failure():
    one = (
        "FileNotFoundError: [Errno 2] No such file or directory: '/tmp/pytest-of-dev/pytest-12/test_load0/config.yaml'"
    )
    two = (
        "FileNotFoundError: [Errno 2] No such file or directory: '/tmp/pytest-of-ci/pytest-873/test_load0/config.yaml'"
    )
    three = "LookupError: order 6f1c2a4e-9b7d-4e21-8c3a-0d5e7f9a1b2c not found"
    four = "LookupError: order 0a2b4c6d-1e3f-4a5b-9c7d-8e9f0a1b2c3d not found"

    assert error_signature(one).digest == error_signature(two).digest  # type: ignore[union-attr]
    assert error_signature(three).digest == error_signature(four).digest  # type: ignore[union-attr]
    assert message_normalise("No such file: '/tmp/a/b/config.yaml'").endswith("<path>/config.yaml'")


@pytest.mark.parametrize(
    ("one", "other"),
    [
        (PYTEST_SHORT, PYTEST_SHORT.replace("ZeroDivisionError: division by zero", "TypeError: bad operand")),
        (PYTHON, PYTHON.replace('"shop_order_pkey"', '"shop_customer_email_key"')),
        (NODE, NODE.replace("at checkout (", "at refund (")),
        (JAVA, JAVA.replace("NullPointerException", "IllegalStateException")),
        (GO_PANIC, GO_PANIC.replace("index out of range", "invalid memory address or nil pointer dereference")),
        (RUST, RUST.replace("E0382", "E0499")),
    ],
)
def test_different_failures_have_different_signatures(one, other):
    assert error_signature(one).digest != error_signature(other).digest  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "output",
    ["", "collected 12 items\n\n12 passed in 0.40s\n", "Compiling shop v0.1.0\n    Finished dev target(s) in 2.1s\n"],
)
def test_output_without_an_error_has_no_signature(output):
    assert error_signature(output) is None


def test_only_the_last_error_of_a_long_output_counts():
    output = PYTHON + "\n" + "." * 30_000 + "\n" + GO_PANIC

    signature = error_signature(output)

    assert signature is not None and signature.type == "panic"
