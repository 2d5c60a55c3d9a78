"""One in-process Spark session for the statistics tests that call the job directly (one JVM)."""

from __future__ import annotations

import logging

import pytest

from consumers.stats.session import spark_session

TEST_CONF = {
    "spark.ui.enabled": "false",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.sql.shuffle.partitions": "4",
}


@pytest.fixture(scope="session")
def spark():
    logging.getLogger("py4j").setLevel(logging.WARNING)  # its goodbye after pytest closed the streams
    session = spark_session("local[2]", app_name="console-tests", conf=TEST_CONF)
    yield session
    session.stop()
