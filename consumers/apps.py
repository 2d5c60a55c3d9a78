from django.apps import AppConfig


class ConsumersConfig(AppConfig):
    name = "consumers"
    verbose_name = "RocketMQ consumers"
    default_auto_field = "django.db.models.BigAutoField"
