"""kafka-python checksums every record batch it writes or reads (CRC-32C). Without the `crc32c` C module it falls
back to pure Python, 0.11 s per MiB on this kind of machine: the load generator then spends a third of its CPU on
checksums, beside the job it loads, and reading a busy job's topics back takes three times as long."""

from kafka.record import util


def test_record_batches_are_checksummed_by_the_c_module() -> None:
    import crc32c

    assert util.calc_crc32c.__defaults__ == (crc32c.crc32c,)


def test_the_c_module_computes_the_checksum_kafka_defines() -> None:
    # RFC 3720's check value for CRC-32C: the same checksum the broker verifies.
    assert util.calc_crc32c(memoryview(b"123456789")) == 0xE3069283
