from sparkpipes.util.display import cell


def test_doubles_keep_their_digits_and_print_without_an_exponent():
    assert cell(1795381440.944) == "1795381440.944"  # ERROR_UNIX_TIMESTAMP
    assert cell(0.1) == "0.1" and cell(2.0) == "2" and cell(None) == "NULL"
