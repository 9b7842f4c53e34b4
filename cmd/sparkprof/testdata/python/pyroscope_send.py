"""Profiles crunch.py with the real pyroscope-io client, uploading to a
server, for TestPyroscopePythonClient.

Usage: python pyroscope_send.py SERVER_URL APP_NAME
The whole run is tagged role=driver, spark_app_id=local-1; the crunching
also step=crunch, by tag_wrapper. shutdown() sends what is left.
"""
import sys

import pyroscope

import crunch

pyroscope.configure(application_name=sys.argv[2], server_address=sys.argv[1], upload_interval=1,
                    tags={"role": "driver", "spark_app_id": "local-1"})
with pyroscope.tag_wrapper({"step": "crunch"}):
    crunch.outer_loop(100)
if not pyroscope.shutdown():
    sys.exit("pyroscope_send: shutdown failed")
print("pyroscope_send: done")
