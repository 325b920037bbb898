"""--verify's and --golden's accuracy, the child's half: the judged outputs, their comparison with eager or a golden
file, the tolerances applied."""
