"""The app serialises JSON from several threads at once from its first second: the server answering a page
while the warm-up draws the explorer's figures. The installed orjson (gradio's and plotly's JSON) must survive
that; before 3.8.9 its lazy numpy set-up aborted the whole process (SIGILL) when two threads raced into it."""

import subprocess
import sys
import textwrap

FIRST_DUMPS_FROM_MANY_THREADS = textwrap.dedent("""
    import threading
    import orjson

    class Unknown:  # not a JSON type: orjson asks whether it is a numpy scalar, which sets up its numpy types
        pass

    start = threading.Barrier(16)

    def dump():
        start.wait()
        orjson.dumps({"value": Unknown()}, option=orjson.OPT_SERIALIZE_NUMPY, default=lambda value: None)

    threads = [threading.Thread(target=dump) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print("survived")
""")


def test_the_installed_orjson_survives_many_threads_serialising_for_the_first_time_at_once():
    for attempt in range(3):  # a fresh process each time: the race is on orjson's first use only
        run = subprocess.run(
            [sys.executable, "-c", FIRST_DUMPS_FROM_MANY_THREADS], capture_output=True, text=True, timeout=120
        )
        assert run.returncode == 0 and run.stdout.strip() == "survived", (
            f"attempt {attempt + 1}: exit status {run.returncode} (a negative one is the signal that ended it)\n"
            f"{run.stderr[-2000:]}"
        )
