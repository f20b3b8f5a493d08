"""Kontor's broker connections run kombu's restore timers on the lab clock; its settings keep production seconds."""

from kontor import broker, clients


def test_transport_durations_are_scaled_and_the_sweep_scans_on_every_tick(monkeypatch):
    """An hour's visibility timeout lasts 0.72 wall seconds at 5,000x, and every restore tick scans Redis."""
    monkeypatch.setenv("KONTOR_TIME_SCALE", "0.0002")
    options = broker.lab_clock_transport_options({"visibility_timeout": 3600, "fanout_prefix": True})
    assert abs(options["visibility_timeout"] - 0.72) < 1e-9
    assert options["unacked_restore_interval"] == broker.FASTEST_TICK
    assert options["unacked_restore_throttle"] == 1
    assert options["fanout_prefix"] is True


def test_the_sweep_ticks_once_per_production_scan(monkeypatch):
    """Kombu scans every 10 s x 10 ticks; on the lab clock the timer fires once per scan, 100 production seconds apart."""
    monkeypatch.setenv("KONTOR_TIME_SCALE", "0.002")
    options = broker.lab_clock_transport_options({})
    assert abs(options["unacked_restore_interval"] - 0.2) < 1e-9
    assert options["unacked_restore_throttle"] == 1
    custom = broker.lab_clock_transport_options({"unacked_restore_interval": 5, "unacked_restore_throttle": 2})
    assert abs(custom["unacked_restore_interval"] - 0.02) < 1e-9
    every_tick = broker.lab_clock_transport_options({"unacked_restore_interval": 20, "unacked_restore_throttle": 0})
    assert abs(every_tick["unacked_restore_interval"] - 0.04) < 1e-9


def test_kombus_default_timeout_is_scaled_when_the_settings_name_none(monkeypatch):
    """Settings without a visibility timeout get kombu's 3600 s, on the lab clock."""
    monkeypatch.setenv("KONTOR_TIME_SCALE", "0.001")
    assert abs(broker.lab_clock_transport_options({})["visibility_timeout"] - 3.6) < 1e-9


def test_real_time_leaves_the_options_as_written(monkeypatch):
    """With no time scale, a worker gets exactly the options its settings wrote."""
    monkeypatch.delenv("KONTOR_TIME_SCALE", raising=False)
    assert broker.lab_clock_transport_options({"visibility_timeout": 10800}) == {"visibility_timeout": 10800}


def test_the_app_configuration_keeps_production_seconds(monkeypatch):
    """Only the connection is scaled: app.conf still says what the settings said."""
    monkeypatch.setenv("KONTOR_TIME_SCALE", "0.0002")
    app = broker.KontorCelery("probe", set_as_current=False)
    app.conf.update(broker_url="redis://127.0.0.1:1/0", broker_transport_options={"visibility_timeout": 10800})
    connection = app.connection_for_read()
    assert app.conf.broker_transport_options == {"visibility_timeout": 10800}
    assert abs(connection.transport_options["visibility_timeout"] - 2.16) < 1e-9
    connection.release()
    app.close()


def test_each_model_call_is_billed_in_the_call_log(monkeypatch, tmp_path):
    """With KONTOR_CALL_LOG set, every model call adds one line with its key, before it answers."""
    log = tmp_path / "calls.log"
    monkeypatch.setenv("KONTOR_CALL_LOG", str(log))
    monkeypatch.setenv("KONTOR_TIME_SCALE", "0.0002")
    monkeypatch.delenv("KONTOR_LATENCY_PLAN", raising=False)
    clients.model_complete("Category code for this receipt: Taxi", key="file-1")
    clients.model_complete("Category code for this receipt: Taxi", key="file-1")
    assert [line.split()[:2] for line in log.read_text().splitlines()] == [["model", "file-1"]] * 2
