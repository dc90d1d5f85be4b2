"""HTML fault reports, suite indexes and JUnit XML, from results and history only."""
