_SESSION = None


def current_session():
    return _SESSION
