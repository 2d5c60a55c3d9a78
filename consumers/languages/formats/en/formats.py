# English writes dates as the console always has, ISO 8601 (2026-11-23), where Django's en
# would write 11/23/2026; the reports and e-mails use these short formats, so an English PDF
# reads as it did before the Chinese interface. Chinese keeps Django's zh_Hans formats
# (2026年11月23日).
SHORT_DATE_FORMAT = "Y-m-d"
SHORT_DATETIME_FORMAT = "Y-m-d H:i"
