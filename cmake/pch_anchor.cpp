// Empty translation unit that owns the shared precompiled header (see FthostPch.cmake).
